"""A Zenoh router for the fleet tests: ``python zenoh_router.py tcp/127.0.0.1:PORT``.

Multicast scouting is off (nothing leaves loopback or the test's network namespaces). Prints
``ready`` once listening; stops on SIGINT/SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import threading


def main() -> int:
    import zenoh

    config = zenoh.Config()
    config.insert_json5("mode", '"router"')
    config.insert_json5("listen/endpoints", json.dumps(sys.argv[1:]))
    config.insert_json5("scouting/multicast/enabled", "false")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    session = zenoh.open(config)
    print("ready", flush=True)
    stop.wait()
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

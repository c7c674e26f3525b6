"""Closing a core or a listener leaves the process's other ZeroMQ sockets working.

The core and the listener watch their connections through ZeroMQ socket monitors. ZeroMQ's
I/O thread (one per process, shared by every socket) sends monitor events with a blocking
send: had a monitor's reading end been closed while the watched socket still produced events
(its own disconnections as it closes), the I/O thread would stall, and every core, listener
and broadcaster made afterwards in that process would connect to nothing. Each round below
runs in a fresh interpreter, so a stall shows here and not as failures of later tests.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

ROUNDS = 25

_CHILD = textwrap.dedent(f"""
    import sys, threading, time
    from tf2py import make_transform
    from tf2py.transport.broadcaster import StaticTransformBroadcaster
    from tf2py.transport.zmq.core import Core
    from tf2py.transport.listener import TransformSubscriber

    for round in range({ROUNDS}):
        got = threading.Event()
        with Core("tcp://127.0.0.1:0") as core:
            subscriber = TransformSubscriber(
                core=core.address,
                on_batch=lambda batch: batch.is_static and got.set())
            with StaticTransformBroadcaster(core=core.address) as probe:
                probe.send_transform(make_transform("probe", "probe_child"))
                if not got.wait(10):
                    print(f"round {{round}}: the latched probe never arrived", flush=True)
                    sys.exit(1)
            subscriber.close()
        print(f"round {{round}} ok", flush=True)
""")


def test_cores_and_listeners_made_one_after_another_in_one_process_all_connect():
    result = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                            timeout=110)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.count(" ok") == ROUNDS

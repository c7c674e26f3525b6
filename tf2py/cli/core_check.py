"""Whether a core answers: a publisher's own latched statics coming back through the bus.

/tf_static is latched at the core, so once a core holds our statics a subscriber of our own
gets them back; no answer within the timeout means no core is listening at the address (yet).
Used by ``tf2py play`` (before /tf, which is not latched) and ``tf2py static-transform-publisher``
(to tell a user whose core is not running).
"""

from __future__ import annotations

import threading
import time
from typing import Any

CONNECT_TIMEOUT_S = 3.0


def statics_echoed(core: str | None, static_broadcaster: Any,
                   timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True once the statics already sent by ``static_broadcaster`` come back from the core
    at ``core``; False if they do not within ``timeout`` seconds."""
    from ..transport.interface import is_ros2
    from ..transport.listener import TransformSubscriber

    if is_ros2(core):
        # No core on a ROS 2 graph: wait (a while) for a listener to know us, as there is
        # nothing to answer; what is latched reaches later listeners anyway.
        deadline = time.monotonic() + timeout
        while static_broadcaster.matched_listeners() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return True
    echoed = threading.Event()
    authority = static_broadcaster.authority

    def on_batch(batch: Any) -> None:
        if batch.is_static and batch.authority == authority:
            echoed.set()

    with TransformSubscriber(core=core, on_batch=on_batch):
        return echoed.wait(timeout)

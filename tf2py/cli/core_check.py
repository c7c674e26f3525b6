"""Whether a core answers: a publisher's own latched statics coming back through the bus.

/tf_static is latched at the core, so once a core holds our statics a subscriber of our own
gets them back; no answer within the timeout means no core is listening at the address (yet).
Used by ``tf2py play`` (before /tf, which is not latched) and ``tf2py static-transform-publisher``
(to tell a user whose core is not running).
"""

from __future__ import annotations

import threading

CONNECT_TIMEOUT_S = 3.0


def statics_echoed(core, static_broadcaster, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True once the statics already sent by ``static_broadcaster`` come back from the core
    at ``core``; False if they do not within ``timeout`` seconds."""
    from ..transport.listener import TransformSubscriber

    echoed = threading.Event()
    authority = static_broadcaster.authority

    def on_batch(batch):
        if batch.is_static and batch.authority == authority:
            echoed.set()

    with TransformSubscriber(core=core, on_batch=on_batch):
        return echoed.wait(timeout)

"""Seeing the frame tree: a live Foxglove WebSocket server (``FoxgloveServer``, in
``foxglove``; it also serves a robot's ``/robot_description`` for Foxglove's 3D panel), a
front that lets clients offering the protocol's older name in (``subprotocols``:
``SubprotocolFront``, which ``tf2py foxglove`` puts before the server), the
``foxglove.FrameTransforms`` encoding that the server and ``tf2py record --foxglove`` use
(``frame_transforms``), and the tree logged into Rerun (``rerun``: ``log_to_rerun`` for a
Buffer, ``RerunView`` for the bus, as ``tf2py rerun``).

Needs the optional extra: ``pip install 'tf2py[viz]'`` (the ``foxglove-sdk`` and
``rerun-sdk`` packages); without it, using any raises ``VizDependencyError`` saying so.
Importing this package never needs the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import INSTALL_HINT, VizDependencyError

if TYPE_CHECKING:
    from .foxglove import FoxgloveServer
    from .rerun import RerunView, log_to_rerun

__all__ = ["FoxgloveServer", "RerunView", "log_to_rerun", "VizDependencyError", "INSTALL_HINT"]


def __getattr__(name: str) -> object:
    # Modules are imported on first use, so `import tf2py.viz` stays cheap; rerun-sdk
    # itself is imported only when a Rerun object is made (VizDependencyError without it).
    if name == "FoxgloveServer":
        from .foxglove import FoxgloveServer

        return FoxgloveServer
    if name in ("log_to_rerun", "RerunView"):
        from . import rerun

        return getattr(rerun, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Seeing the frame tree: a live Foxglove WebSocket server (``FoxgloveServer``) and the
``foxglove.FrameTransforms`` encoding that ``tf2py record --foxglove`` writes.

Needs the optional extra: ``pip install 'tf2py[viz]'`` (the ``foxglove-sdk`` package);
without it, using either raises ``VizDependencyError`` saying so. Importing this package
never needs the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import INSTALL_HINT, VizDependencyError

if TYPE_CHECKING:
    from .foxglove import FoxgloveServer

__all__ = ["FoxgloveServer", "VizDependencyError", "INSTALL_HINT"]


def __getattr__(name: str) -> type[FoxgloveServer]:
    # The server module is imported on first use, so `import tf2py.viz` stays cheap.
    if name == "FoxgloveServer":
        from .foxglove import FoxgloveServer

        return FoxgloveServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The one error of the viz extra: its library is missing."""

from __future__ import annotations

from types import ModuleType

__all__ = ["VizDependencyError", "INSTALL_HINT", "require_foxglove"]

INSTALL_HINT = "pip install 'tf2py[viz]'"


class VizDependencyError(ImportError):
    """The optional ``foxglove-sdk`` library is not installed; the message says how to
    install it (one line)."""


def require_foxglove() -> ModuleType:
    """Import the ``foxglove`` SDK, or raise ``VizDependencyError``."""
    try:
        import foxglove
        import foxglove.channels
        import foxglove.messages
    except ImportError:
        raise VizDependencyError(
            f"the Foxglove view needs the optional library 'foxglove-sdk': {INSTALL_HINT}"
        ) from None
    module: ModuleType = foxglove
    return module

"""What reading or writing a bag can go wrong with, as tf2py exceptions with one-line messages."""

from __future__ import annotations

from types import ModuleType

__all__ = ["BagError", "BagDependencyError", "BagWarning", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'tf2py[bag]'"


class BagError(Exception):
    """A bag cannot be read or written: missing, empty, corrupt or truncated file, no
    transform topic, a topic whose type is not a transform. ``str(exc)`` is one line."""


class BagDependencyError(BagError, ImportError):
    """The optional bag libraries are not installed; the message says how to install them."""


class BagWarning(UserWarning):
    """Part of a bag was skipped (undecodable messages, invalid or too old transforms);
    the message gives the counts."""


def require(module_name: str) -> ModuleType:
    """Import one of the ``tf2py[bag]`` libraries, or raise ``BagDependencyError``."""
    import importlib

    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise BagDependencyError(
            f"reading and writing bags needs the optional library {module_name.split('.')[0]!r}: "
            f"{INSTALL_HINT}"
        ) from None

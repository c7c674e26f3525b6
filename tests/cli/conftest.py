"""The command tests' fixtures (written in cli_support.py): pytest finds them here, so a test
takes ``tf2py``, ``core``, ``latch`` or ``repeat`` as an argument without importing it."""

from __future__ import annotations

from cli_support import core, latch, repeat, tf2py

__all__ = ["core", "latch", "repeat", "tf2py"]

"""The doctor tests' fixtures: ``tf2py`` runs a command (written in tests/cli/cli_support.py)."""

from __future__ import annotations

from cli.cli_support import tf2py

__all__ = ["tf2py"]

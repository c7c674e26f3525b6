"""Fixtures of the robot-model tests: URDF text written to files."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture
def urdf_file(tmp_path: Path) -> Callable[..., Path]:
    """``urdf_file(text, name="robot.urdf")`` writes ``text`` and returns its path."""

    def write(text: str, name: str = "robot.urdf") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write

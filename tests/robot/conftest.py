"""Fixtures of the robot-model tests: URDF text written to files."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def urdf_file(tmp_path: Path) -> Callable[..., Path]:
    """``urdf_file(text, name="robot.urdf")`` writes ``text`` and returns its path."""

    def write(text: str, name: str = "robot.urdf") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.fixture(scope="session")
def published() -> dict[tuple[str, str], Path]:
    """example-robot-data's URDF and xacro files by (package folder, file name), found
    through the package's metadata; skips when the package (the test extra) is absent."""
    try:
        files = importlib.metadata.distribution("example-robot-data").files or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (the test extra brings it)")
    found: dict[tuple[str, str], Path] = {}
    for file in files:
        parts = Path(str(file)).parts
        if parts[-1].endswith((".urdf", ".xacro")) and "robots" in parts:
            folder = parts[parts.index("robots") + 1]
            found.setdefault((folder, parts[-1]), Path(str(file.locate())))
    return found

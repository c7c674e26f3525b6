"""Fixtures shared by the whole suite; the plain helpers live in tests/helpers.py."""

from __future__ import annotations

import sys

import pytest

from helpers import REPO, SHARED_DATA, Proc, free_address, free_port, wait_for  # noqa: F401


@pytest.fixture
def spawn():
    """Start subprocesses with ``spawn([...])``; every one still running is ended at teardown."""
    procs: list[Proc] = []

    def start(args, env=None, cwd=None) -> Proc:
        p = Proc(args, env=env, cwd=cwd)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.stop(timeout=5)


@pytest.fixture
def tf2py_command():
    """The argv prefix that runs the tf2py command with this interpreter."""
    return [sys.executable, "-m", "tf2py.cli.main"]

"""Fixtures for the command-line tests: a real `tf2py core` subprocess on free ports, a way to
run tf2py commands as subprocesses, and broadcasters running in the test process.

A module, not a conftest.py: a second conftest.py would shadow tests/conftest.py for every
``from conftest import ...`` in the suite. Test modules import the fixtures they use from here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading

import pytest

from helpers import free_address, free_port, wait_for  # noqa: F401 (re-exported)
from tf2py import StaticTransformBroadcaster, Time, TransformBroadcaster


def free_bus_address() -> str:
    """tcp://127.0.0.1:PORT where PORT and PORT + 1 are both free (a core uses both)."""
    for _ in range(100):
        port = free_port()
        if port >= 65534:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return f"tcp://127.0.0.1:{port}"
    raise RuntimeError("no two consecutive free ports found")


def start_core(spawn, tf2py_command) -> str:
    """Start `tf2py core` on free ports; its address once it says it is ready."""
    proc = spawn([*tf2py_command, "core", "--address", "tcp://127.0.0.1:0"])
    line = proc.wait_for_line("ready at ", timeout=120)
    return line.split("ready at ", 1)[1].strip()


@pytest.fixture
def core(spawn, tf2py_command) -> str:
    return start_core(spawn, tf2py_command)


@pytest.fixture
def tf2py(tf2py_command):
    """``tf2py(*args, env=None, timeout=60)`` runs one command to completion and returns the
    CompletedProcess (text stdout and stderr)."""

    def run(*args, env=None, timeout=60, cwd=None):
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        return subprocess.run([*tf2py_command, *args], capture_output=True, text=True,
                              env=full_env, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)

    return run


class Repeater:
    """Sends the same transforms on /tf every 50 ms from a named daemon thread, as a live
    broadcaster would, until closed (/tf is not latched: late listeners need repeats)."""

    def __init__(self, core: str, transforms, live: bool = False):
        self.broadcaster = TransformBroadcaster(core=core)
        self.transforms = list(transforms)
        self.live = live  # stamp every round with the wall clock
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="test-repeater")
        self.thread.start()

    @property
    def authority(self) -> str:
        return self.broadcaster.authority

    def _run(self):
        while not self.stop.is_set():
            if self.live:
                now = Time.now()
                for t in self.transforms:
                    t.header.stamp = now
            self.broadcaster.send_transform(self.transforms)
            self.stop.wait(0.05)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.broadcaster.close()


@pytest.fixture
def repeat():
    """``repeat(core, transforms, live=False)``: broadcast them every 50 ms for the rest of the
    test (``live``: stamped with the wall clock each time)."""
    started = []

    def start(core, transforms, live=False) -> Repeater:
        r = Repeater(core, transforms, live)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()


@pytest.fixture
def latch():
    """``latch(core, transforms)``: send them once on the latched /tf_static stream."""
    started = []

    def send(core, transforms) -> StaticTransformBroadcaster:
        b = StaticTransformBroadcaster(core=core)
        started.append(b)
        b.send_transform(list(transforms))
        return b

    yield send
    for b in started:
        b.close()

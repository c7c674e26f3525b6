"""Shared test helpers (import them with ``from helpers import ...``; a conftest module
cannot be imported by name reliably once several directories have one): free loopback ports,
subprocesses that are always reaped, waiting on conditions with deadlines (never bare
sleeps), and the path to the shared recordings."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from simulators.shared_data import shared_data
from tf2py.buffer.buffer import Buffer

REPO = Path(__file__).resolve().parent.parent


SHARED_DATA = shared_data()


def under_ci() -> bool:
    """True under CI (``CI=true``, as CI services set it), where nothing may skip."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def skip_or_fail(reason: str):
    """Skip the test for a missing peer (a tool, an environment), or fail it under CI: there a
    skip would let a green run hide that the test never ran."""
    if under_ci():
        pytest.fail(f"{reason} (CI=true: a missing peer fails rather than skips)",
                    pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_address() -> str:
    """A ``tcp://`` address for a core, which binds its port P and P + 1: both free now."""
    return f"tcp://127.0.0.1:{free_port_pair()}"


def free_port_pair() -> int:
    """A port P on 127.0.0.1 such that P and P + 1 are both free right now, below the
    kernel's ephemeral range: a client that connects to a port nobody listens on yet can
    otherwise be given that very port as its own and connect to itself (TCP simultaneous
    open), and the core started later cannot bind it."""
    low = _ephemeral_low()
    for _ in range(500):
        port = random.randrange(max(1024, low - 12_000), low - 2)
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair")


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def wait_for(condition, timeout: float = 10.0, interval: float = 0.005, message=""):
    """Call ``condition`` until it returns a truthy value; fail the test at the deadline.
    ``message`` says what was awaited: a string, or a callable giving it at the deadline
    (for output gathered while waiting)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            said = message() if callable(message) else message
            pytest.fail(f"condition not met within {timeout} s: {said or condition}")
        time.sleep(interval)


def mcap_transforms_so_far(path) -> list[tuple[str, str]]:
    """(parent, child) of every ``/tf`` or ``/tf_static`` transform already on disk in the MCAP
    file at ``path``, which a recorder may still be writing: records are read in order up to
    where the file ends for now (a recorder writes whole chunks, so what a test waits for
    is on disk once the chunk holding it is)."""
    import struct

    from mcap.exceptions import McapError
    from mcap.records import Channel, Message
    from mcap.stream_reader import StreamReader

    from tf2py.bag.codec import RowBuilder, decode_ros2

    columns = RowBuilder()
    transform_channels: set[int] = set()
    try:
        with open(path, "rb") as f:
            for record in StreamReader(f, skip_magic=False).records:
                if isinstance(record, Channel) and record.topic in ("/tf", "/tf_static"):
                    transform_channels.add(record.id)
                elif isinstance(record, Message) and record.channel_id in transform_channels:
                    decode_ros2(record.data, columns)
    except (McapError, EOFError, OSError, struct.error, ValueError):
        pass  # the end of what is written so far (a record cut short)
    return list(zip(columns.parents, columns.children))


class Proc:
    """A subprocess whose output lines are collected on a thread, so tests can wait for a
    line with a deadline. Always ended by its PID when the test ends."""

    def __init__(self, args, env=None, cwd=None):
        full_env = dict(os.environ)
        full_env["PYTHONUNBUFFERED"] = "1"
        if env:
            full_env.update(env)
        self.args = args
        self.popen = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True, name="proc-reader")
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read(self):
        for line in self.popen.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def wait_for_line(self, predicate, timeout: float = 15.0) -> str:
        """The first output line for which ``predicate`` (a substring or a callable) holds."""
        test = (lambda line: predicate in line) if isinstance(predicate, str) else predicate

        def found():
            with self._lock:
                for line in self.lines:
                    if test(line):
                        return line
            if self.popen.poll() is not None:
                self._reader.join(timeout=2)
                with self._lock:
                    for line in self.lines:
                        if test(line):
                            return line
                pytest.fail(
                    f"process {self.args} exited with {self.popen.returncode} before the line "
                    f"appeared; output:\n{self.output()}"
                )
            return None

        return wait_for(found, timeout, message=f"line {predicate!r} from {self.args}; "
                        f"output so far:\n{self.output()}")

    def signal(self, sig=signal.SIGINT):
        if self.popen.poll() is None:
            self.popen.send_signal(sig)

    def wait(self, timeout: float = 15.0) -> int:
        rc = self.popen.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return rc

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGINT, then SIGKILL after ``timeout``; returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)
        self._reader.join(timeout=5)
        return self.popen.returncode


def ros_domain_id(low: int, high: int) -> int:
    """A random ROS 2 domain id in ``[low, high)`` for one test. Under pytest-xdist each
    worker draws from its own slice of the range, so tests running at once never share a
    domain (and never hear each other's nodes)."""
    import random

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    span = (high - low) // max(count, 1)
    if span < 1:
        raise ValueError(f"{count} workers cannot share domains {low}..{high - 1}")
    start = low + index * span
    return random.Random().randrange(start, start + span)


class InsertHookBuffer(Buffer):
    """The real Buffer, calling ``before_insert(children)`` first in every insert call (tests
    override it to stall or fail)."""

    def before_insert(self, children) -> None:
        pass

    def set_transforms(self, parents, children, *args, **kwargs):
        self.before_insert(children)
        return super().set_transforms(parents, children, *args, **kwargs)

    def set_transform_values(self, parent, child, *args, **kwargs):
        self.before_insert([child])
        return super().set_transform_values(parent, child, *args, **kwargs)


def stalling_buffer(seconds: float) -> InsertHookBuffer:
    """A real Buffer whose every insert call waits ``seconds`` first: the window in which a
    listener has a message in hand and the buffer does not hold it yet."""

    class StallingBuffer(InsertHookBuffer):
        def before_insert(self, children) -> None:
            time.sleep(seconds)

    return StallingBuffer()


def raising_buffer(bad_child: str) -> InsertHookBuffer:
    """A real Buffer whose inserts raise RuntimeError when they carry ``bad_child`` (a buffer
    with a fault of its own), and store everything else."""

    class RaisingBuffer(InsertHookBuffer):
        def before_insert(self, children) -> None:
            if bad_child in list(children):
                raise RuntimeError(f"buffer bug on {bad_child}")

    return RaisingBuffer()

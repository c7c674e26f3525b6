"""Waits end because the insertion wakes them, not because a poll came round: one wake-up
per waiting thread, within moments of the insert (tf2 polls every 10/20 ms)."""

from __future__ import annotations

import threading
import time as wall

from helpers import wait_for
from tf2py.buffer.buffer import Buffer
from tf2py.buffer.messages import make_transform

LONG = 30.0


def count_waits(buffer):
    """Wrap the buffer's condition so each wait() call is counted."""
    condition = buffer._condition
    original = condition.wait
    calls = {"n": 0}

    def wait(timeout=None):
        calls["n"] += 1
        return original(timeout)

    condition.wait = wait
    return calls


def _wake_once(buffer, call):
    calls = count_waits(buffer)
    result = {}

    def reader():
        result["value"] = call()
        result["returned"] = wall.monotonic()

    thread = threading.Thread(target=reader, name="test-reader", daemon=True)
    thread.start()
    wait_for(lambda: buffer._index.waiting >= 1, timeout=10.0, message="reader waiting")
    inserted = wall.monotonic()
    buffer.set_transform(make_transform("a", "b", stamp=1.0), "x")
    thread.join(LONG)
    assert not thread.is_alive()
    return result, calls["n"], result["returned"] - inserted


def test_a_timed_lookup_is_woken_once_by_the_insert():
    buffer = Buffer()
    result, waits, delay = _wake_once(
        buffer, lambda: buffer.lookup_transform("a", "b", 1.0, timeout=LONG)
    )
    assert result["value"].header.frame_id == "a"
    # A poll would wait many times over a wait that long; the insert wakes it once.
    assert waits == 1
    assert delay < 2.0  # generous for a loaded machine; a 30 s poll would miss it


def test_a_timed_can_transform_is_woken_once_by_the_insert():
    buffer = Buffer()
    result, waits, delay = _wake_once(
        buffer, lambda: buffer.can_transform("a", "b", 1.0, timeout=LONG)
    )
    assert result["value"] is True
    assert waits == 1
    assert delay < 2.0


def test_unrelated_inserts_do_not_end_the_wait_early():
    buffer = Buffer()
    calls = count_waits(buffer)
    done = threading.Event()

    def reader():
        buffer.lookup_transform("a", "b", 1.0, timeout=LONG)
        done.set()

    thread = threading.Thread(target=reader, name="test-reader", daemon=True)
    thread.start()
    wait_for(lambda: buffer._index.waiting >= 1, timeout=10.0, message="reader waiting")
    for k in range(3):
        buffer.set_transform(make_transform("x", "y", stamp=1.0 + k), "x")
        wait_for(lambda n=k: calls["n"] >= n + 2, timeout=10.0, message="reader re-checked")
    assert not done.is_set()
    buffer.set_transform(make_transform("a", "b", stamp=1.0), "x")
    assert done.wait(LONG)
    # One wait per insert that woke it: three unrelated ones, then the one it needed.
    assert calls["n"] == 4

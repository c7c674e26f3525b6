"""The public set_transform is the kernel's own function (py_entry.hpp): an idle Buffer's
inserts run no Python; a waiting thread makes each insert call back after it; pending
requests, a clock or an insert listener send every insert through Python first. The route is
the buffer's insert mode, which must come back to "the kernel alone" once nothing waits."""

from __future__ import annotations

import threading

import pytest

import tf2py.buffer.kernel as kernel_module
from helpers import wait_for
from tf2py import Buffer, BufferCore, InvalidArgumentException, make_transform
from tf2py.buffer import _kernel_ext


class Routed(Buffer):
    """A Buffer that counts the Python each insert ran."""

    def __init__(self, *args, **kwargs):
        self.after = 0
        self.slow = 0
        super().__init__(*args, **kwargs)

    def _after_direct_insert(self, transform, stored):
        self.after += 1
        super()._after_direct_insert(transform, stored)

    def _set_transform_slow(self, transform, authority, is_static=False):
        self.slow += 1
        return super()._set_transform_slow(transform, authority, is_static)


def _insert(buffer, stamp, child="b"):
    return buffer.set_transform(make_transform("a", child, (stamp, 0, 0), stamp=stamp), "test")


def test_an_idle_buffer_stores_without_python():
    buffer = Routed()
    for k in range(20):
        assert _insert(buffer, 1.0 + k) is True
    assert (buffer.after, buffer.slow) == (0, 0)
    assert buffer.lookup_transform("a", "b", 15.0).transform.translation.x == 15.0


def test_a_waiting_thread_is_told_of_each_insert_and_the_route_ends_with_the_wait():
    buffer = Routed()
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(ok=buffer.can_transform("a", "c", 2.0, timeout=30.0)),
        name="test-waiter", daemon=True)
    thread.start()
    wait_for(lambda: buffer._index.waiting == 1, message="the waiter counted")
    _insert(buffer, 1.0)  # another frame: the waiter is woken, re-checks, waits on
    assert buffer.after == 1 and thread.is_alive()
    _insert(buffer, 2.0, child="c")
    thread.join(30.0)
    assert result == {"ok": True}
    assert buffer.after == 2 and buffer.slow == 0
    for k in range(5):
        _insert(buffer, 3.0 + k)
    assert buffer.after == 2  # nothing waits: the kernel alone again


def test_pending_requests_send_inserts_through_python_until_answered():
    buffer = Routed()
    future = buffer.wait_for_transform_async("a", "c", 2.0)
    assert not future.done()
    _insert(buffer, 1.0)
    assert buffer.slow == 1
    _insert(buffer, 2.0, child="c")
    assert future.result(timeout=5.0).header.frame_id == "a"
    slow = buffer.slow
    for k in range(5):
        _insert(buffer, 3.0 + k)
    assert (buffer.slow, buffer.after) == (slow, 0)


def test_a_cancelled_request_ends_the_slow_route():
    buffer = Routed()
    future = buffer.wait_for_transform_async("a", "never", 2.0)
    _insert(buffer, 1.0)
    assert buffer.slow == 1
    assert future.cancel()
    assert buffer.pending_request_count == 0
    _insert(buffer, 2.0)
    assert buffer.slow == 1


def test_an_insert_listener_sees_every_insert_and_removing_it_ends_the_route():
    buffer = Routed()
    heard = []
    listener = lambda parents, children: heard.append((set(parents), set(children)))  # noqa: E731
    buffer.add_insert_listener(listener)
    _insert(buffer, 1.0)
    assert heard == [({"a"}, {"b"})] and buffer.slow == 1
    buffer.remove_insert_listener(listener)
    _insert(buffer, 2.0)
    assert len(heard) == 1 and buffer.slow == 1


def test_refusals_keep_their_errors_through_the_entry():
    for store in (BufferCore(), Buffer()):
        with pytest.raises(InvalidArgumentException, match="TransformStamped"):
            store.set_transform("not a message", "test")
        with pytest.raises(InvalidArgumentException):
            store.set_transform(make_transform("a", "a", stamp=1.0), "test")
        assert store.set_transform(make_transform("a", "b", stamp=20.0), "test") is True
        assert store.set_transform(make_transform("a", "b", stamp=1.0), "test") is False  # old
        assert store.all_frames_as_string() == "Frame b exists with parent a.\n"


def test_the_insert_mode_and_fallbacks_refuse_bad_values():
    store = BufferCore()
    with pytest.raises(ValueError, match="0, 1 or 2"):
        store._kernel.set_insert_mode(3)
    with pytest.raises(TypeError):
        store._kernel.set_insert_mode("2")
    with pytest.raises(TypeError, match="callables"):
        _kernel_ext.configure(**{**kernel_module._kernel_configuration(), "insert_slow": 5})
    assert store.set_transform(make_transform("a", "b", stamp=1.0), "test") is True

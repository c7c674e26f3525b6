"""wait_for_transform_async / wait_for_transform_full_async: futures resolved by the
insertion that makes them possible, cancellable, cheap with many pending."""

from __future__ import annotations

import gc
import threading
import weakref
from concurrent.futures import CancelledError

import numpy as np
import pytest

import tf2py.buffer.requests as buffer_module
from tf2py.buffer.buffer import Buffer
from tf2py.buffer.exceptions import (
    BackwardExtrapolationException,
    InvalidArgumentException,
)
from tf2py.buffer.messages import TransformStamped, make_transform
from tf2py.buffer.time import Time

QUICK = 10.0


@pytest.fixture
def buffer():
    b = Buffer()
    b.set_transform(make_transform("map", "odom", (1.0, 0.0, 0.0), stamp=1), "test")
    b.set_transform(make_transform("map", "odom", (2.0, 0.0, 0.0), stamp=2), "test")
    return b


@pytest.fixture
def lookup_count(monkeypatch):
    """Counts the core lookups Buffer makes to re-check pending requests."""
    calls = {"n": 0}
    simple = buffer_module._core_lookup_transform
    full = buffer_module._core_lookup_transform_full

    def counting_simple(*args):
        calls["n"] += 1
        return simple(*args)

    def counting_full(*args):
        calls["n"] += 1
        return full(*args)

    monkeypatch.setattr(buffer_module, "_core_lookup_transform", counting_simple)
    monkeypatch.setattr(buffer_module, "_core_lookup_transform_full", counting_full)
    return calls


def test_future_is_resolved_at_once_when_possible_now(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 1.5)
    assert future.done()
    result = future.result(0)
    assert isinstance(result, TransformStamped)
    assert result.transform.translation.x == pytest.approx(1.5)
    assert buffer.pending_request_count == 0


def test_future_is_resolved_by_the_insertion_that_makes_it_possible(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    assert not future.done()
    buffer.set_transform(make_transform("map", "odom", (3.0, 0.0, 0.0), stamp=3), "test")
    assert future.done()
    assert future.result(0) == buffer.lookup_transform("map", "odom", 3)
    assert buffer.pending_request_count == 0


def test_future_for_a_frame_that_does_not_exist_yet(buffer):
    future = buffer.wait_for_transform_async("map", "base", 2)
    buffer.set_transform(make_transform("elsewhere", "x", stamp=2), "test")
    assert not future.done()
    buffer.set_transform(make_transform("odom", "base", (0.0, 1.0, 0.0), stamp=2), "test")
    t = future.result(0).transform.translation
    assert (t.x, t.y) == (2.0, 1.0)


def test_future_at_time_zero_waits_for_the_whole_chain(buffer):
    future = buffer.wait_for_transform_async("map", "tool", Time())
    buffer.set_transform(make_transform("odom", "base", stamp=1), "test")
    buffer.set_transform(make_transform("odom", "base", stamp=2), "test")
    assert not future.done()
    buffer.set_transform(make_transform("base", "tool", stamp=1.25), "test")
    assert future.result(0).header.stamp == Time.from_seconds(1.25)


def test_future_is_resolved_by_a_batch_insert_with_one_check(buffer, lookup_count):
    future = buffer.wait_for_transform_async("map", "odom", 3.5)
    lookup_count["n"] = 0
    stamps = np.arange(21, 41) * 100_000_000  # 2.1 s .. 4.0 s
    values = np.tile([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], (len(stamps), 1))
    buffer.set_transforms(["map"] * len(stamps), ["odom"] * len(stamps), stamps, values, "t")
    assert future.done()
    assert lookup_count["n"] == 1


def test_future_with_invalid_frame_fails_at_once(buffer):
    future = buffer.wait_for_transform_async("map", "/odom", 1)
    assert future.done()
    with pytest.raises(InvalidArgumentException, match="cannot start with a '/'"):
        future.result(0)
    assert buffer.pending_request_count == 0


def test_future_for_a_time_older_than_the_cache_fails(buffer):
    # 30 s and 31 s: the pruning drops the 1 s and 2 s samples; 5 s is then beyond the
    # 10 s window of every link, so no insertion can ever make it available.
    buffer.set_transform(make_transform("map", "odom", stamp=30), "test")
    buffer.set_transform(make_transform("map", "odom", stamp=31), "test")
    future = buffer.wait_for_transform_async("map", "odom", 5)
    with pytest.raises(BackwardExtrapolationException, match="No data can make"):
        future.result(0)


def test_cancel_removes_the_pending_request(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    assert buffer.pending_request_count == 1
    assert future.cancel()
    assert buffer.pending_request_count == 0
    assert buffer._index.requests == {} and buffer._index._watch == {} and buffer._index._watch_any == {}
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    with pytest.raises(CancelledError):
        future.result(0)


def test_cancel_one_of_two_identical_requests_keeps_the_other(buffer):
    first = buffer.wait_for_transform_async("map", "odom", 3)
    second = buffer.wait_for_transform_async("map", "odom", 3)
    first.cancel()
    assert buffer.pending_request_count == 1
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    assert second.result(0).header.stamp == Time(3)


def test_identical_requests_share_one_check_and_get_separate_results(buffer, lookup_count):
    futures = [buffer.wait_for_transform_async("map", "odom", 3) for _ in range(10)]
    lookup_count["n"] = 0
    buffer.set_transform(make_transform("map", "odom", (3.0, 0.0, 0.0), stamp=3), "test")
    assert lookup_count["n"] == 1
    results = [f.result(0) for f in futures]
    assert all(r == results[0] for r in results)
    assert len({id(r) for r in results}) == 10


def test_full_form_is_resolved_by_the_insertion(buffer):
    future = buffer.wait_for_transform_full_async("base", 2, "base", 1, "odom")
    buffer.set_transform(make_transform("odom", "base", (0.0, 1.0, 0.0), stamp=1), "test")
    assert not future.done()
    buffer.set_transform(make_transform("odom", "base", (0.0, 2.0, 0.0), stamp=2), "test")
    result = future.result(0)
    assert result == buffer.lookup_transform_full("base", 2, "base", 1, "odom")
    assert result.transform.translation.y == pytest.approx(-1.0)


def test_full_form_with_invalid_fixed_frame_fails_at_once(buffer):
    future = buffer.wait_for_transform_full_async("map", 1, "odom", 1, "")
    with pytest.raises(InvalidArgumentException):
        future.result(0)


def test_full_form_resolved_at_once_when_possible(buffer):
    future = buffer.wait_for_transform_full_async("map", 2, "odom", 1, "map")
    assert future.done()
    assert future.result(0).header.stamp == Time(2)


def test_unrelated_insertions_do_not_recheck_pending_requests(buffer, lookup_count):
    futures = [buffer.wait_for_transform_async("map", f"robot{i}", 2) for i in range(300)]
    lookup_count["n"] = 0
    for k in range(10):
        buffer.set_transform(make_transform("world", f"landmark{k}", stamp=2), "test")
    assert lookup_count["n"] == 0
    buffer.set_transform(make_transform("map", "robot7", stamp=2), "test")
    assert lookup_count["n"] == 1
    assert futures[7].done() and sum(f.done() for f in futures) == 1


def test_insertion_beyond_the_path_does_not_recheck(buffer, lookup_count):
    # map -> odom known up to 2 s; waiting for 3 s. New data for a sibling frame of odom
    # cannot help; new odom data can.
    future = buffer.wait_for_transform_async("map", "odom", 3)
    lookup_count["n"] = 0
    buffer.set_transform(make_transform("map", "sibling", stamp=3), "test")
    assert lookup_count["n"] == 0
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    assert future.done()


def test_reparenting_a_root_connects_a_pending_request(buffer):
    buffer.set_transform(make_transform("island", "rock", stamp=2), "test")
    future = buffer.wait_for_transform_async("odom", "rock", 2)
    assert not future.done()
    buffer.set_transform(make_transform("map", "island", stamp=2), "test")
    assert future.done()
    assert future.result(0).header.frame_id == "odom"


def test_static_insert_resolves_a_pending_request(buffer):
    future = buffer.wait_for_transform_async("map", "laser", 2)
    buffer.set_transform_static(make_transform("odom", "laser", (0.0, 0.0, 1.0)), "test")
    assert future.result(0).transform.translation.z == 1.0


def test_set_transform_values_resolves_a_pending_request(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    buffer.set_transform_values(
        "map", "odom", 3_000_000_000, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, "test"
    )
    assert future.result(0).transform.translation.x == 3.0


def test_insertion_with_leading_slash_names_resolves_a_pending_request(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    buffer.set_transform(make_transform("/map", "/odom", stamp=3), "test")
    assert future.done()


def test_futures_are_resolved_outside_the_lock(buffer):
    # A callback that needs the buffer from another thread would deadlock if the inserting
    # thread still held the lock.
    reached = threading.Event()
    outcome = []

    def callback(_future):
        def other():
            buffer.can_transform("map", "odom", 3)
            reached.set()

        threading.Thread(target=other, daemon=True, name="callback-reader").start()
        outcome.append(reached.wait(QUICK))

    future = buffer.wait_for_transform_async("map", "odom", 3)
    future.add_done_callback(callback)
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    assert outcome == [True]


def test_callback_may_insert_into_the_buffer(buffer):
    second = []

    def callback(_future):
        buffer.set_transform(make_transform("map", "odom", stamp=4), "test")
        second.append(buffer.lookup_transform("map", "odom", 4))

    future = buffer.wait_for_transform_async("map", "odom", 3)
    future.add_done_callback(callback)
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    assert second and second[0].header.stamp == Time(4)


def test_failing_callback_does_not_break_the_insertion(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    future.add_done_callback(lambda f: 1 / 0)
    assert buffer.set_transform(make_transform("map", "odom", stamp=3), "test") is True
    assert future.done()


def test_pending_future_does_not_keep_the_buffer_alive():
    buffer = Buffer()
    future = buffer.wait_for_transform_async("map", "odom", 3)
    ref = weakref.ref(buffer)
    del buffer
    gc.collect()
    assert ref() is None
    assert future.cancelled()


def test_future_is_resolved_from_another_thread(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    writer = threading.Thread(
        target=lambda: buffer.set_transform(make_transform("map", "odom", stamp=3), "w"),
        daemon=True,
        name="test-writer",
    )
    writer.start()
    assert future.result(QUICK).header.stamp == Time(3)
    writer.join(QUICK)


def test_clear_does_not_resolve_pending_requests_wrongly(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 3)
    buffer.clear()
    assert not future.done()
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    assert future.done()


def test_non_string_frame_raises_type_error(buffer):
    with pytest.raises(TypeError, match="frame ids are strings"):
        buffer.wait_for_transform_async("map", None, 1)
    assert buffer.pending_request_count == 0


def test_bad_time_raises_type_error(buffer):
    with pytest.raises(TypeError):
        buffer.wait_for_transform_full_async("map", "soon", "odom", 1, "map")


def test_samples_older_than_the_requested_time_do_not_recheck(buffer, lookup_count):
    # Waiting for odom at 5 s: samples at 2.5 s .. 4.5 s cannot answer at 5 s.
    futures = [buffer.wait_for_transform_async("map", "odom", 5 + i / 1000) for i in range(100)]
    lookup_count["n"] = 0
    for k in range(5, 10):
        buffer.set_transform(make_transform("map", "odom", stamp=k / 2), "test")
    assert lookup_count["n"] == 0
    buffer.set_transform(make_transform("map", "odom", stamp=5.05), "test")
    assert lookup_count["n"] == 51  # the requests for 5.000 .. 5.050 s
    assert [f.done() for f in futures] == [i <= 50 for i in range(100)]
    buffer.set_transform(make_transform("map", "odom", stamp=6), "test")
    assert all(f.done() for f in futures)


def test_time_zero_request_is_rechecked_by_any_sample_on_its_path(buffer, lookup_count):
    future = buffer.wait_for_transform_async("map", "base", 0)
    buffer.set_transform(make_transform("odom", "base", stamp=0.5), "test")
    assert not future.done()  # base known at 0.5 s only, odom from 1 s
    buffer.set_transform(make_transform("odom", "base", stamp=1.5), "test")
    assert future.result(0).header.stamp == Time.from_seconds(1.5)


def test_static_frame_turning_dynamic_rechecks_its_timed_requests(buffer):
    # a is static (under c) and c is under a: a loop, so the request fails. Then a becomes
    # dynamic under b with an old sample: a is now the common ancestor and the lookup works,
    # although a's new sample is older than the requested time.
    buffer.set_transform(make_transform("a", "c", stamp=1.0), "test")
    future = buffer.wait_for_transform_full_async("a", 1.0, "a", 1.0, "b")
    buffer.set_transform_static(make_transform("c", "a"), "test")
    buffer.set_transform_static(make_transform("a", "b"), "test")
    assert not future.done()
    buffer.set_transform(make_transform("b", "a", stamp=0.5), "test")
    assert future.done() and future.result(0).header.frame_id == "a"


def test_refused_old_insert_that_prunes_rechecks_pending_requests():
    # b's 0.5 s sample closes a loop a -> b -> a at 0.5 s. Inserting b at 0.5 s again is
    # refused (older than 5 s - 4 s), but prunes that sample first, as tf2 does; the loop
    # is gone and the request can be answered.
    buffer = Buffer(cache_time=4.0)
    buffer.set_transform(make_transform("a", "b", stamp=0.5), "test")
    buffer.set_transform(make_transform("a", "b", stamp=5.0), "test")
    buffer.set_transform(make_transform("b", "a", stamp=0.5), "test")
    buffer.set_transform_static(make_transform("a", "c"), "test")
    future = buffer.wait_for_transform_async("c", "a", 0.5)
    assert not future.done()
    assert buffer.set_transform(make_transform("a", "b", stamp=0.5), "test") is False
    assert future.done() and future.result(0).header.frame_id == "c"


def test_resolved_and_cancelled_requests_leave_nothing_behind(buffer):
    futures = []
    for i in range(200):
        futures.append(buffer.wait_for_transform_async("map", "odom", 3 + i / 100))
        futures.append(buffer.wait_for_transform_async("map", f"robot{i}", 0))
        futures.append(buffer.wait_for_transform_full_async("map", 0, "odom", 3 + i, "map"))
    for future in futures[2::3]:
        future.cancel()
    buffer.set_transform(make_transform("map", "odom", stamp=6), "test")
    for i in range(200):
        buffer.set_transform(make_transform("map", f"robot{i}", stamp=1), "test")
    assert all(f.done() for f in futures)
    assert buffer.pending_request_count == 0
    assert buffer._index.requests == {} and buffer._index._watch == {} and buffer._index._watch_any == {}


def test_clear_resolves_a_request_that_only_dynamic_data_blocked():
    # a -> b -> a at 1 s is a loop, so c <- a fails; clear() forgets the loop (c under a is
    # static and stays), and the request is answered by clear() itself.
    buffer = Buffer()
    buffer.set_transform(make_transform("a", "b", stamp=1), "test")
    buffer.set_transform(make_transform("b", "a", stamp=1), "test")
    buffer.set_transform_static(make_transform("a", "c"), "test")
    future = buffer.wait_for_transform_async("c", "a", 1)
    assert not future.done()
    buffer.clear()
    assert future.done() and future.result(0).header.frame_id == "c"


def test_identical_requests_that_fail_get_their_own_exceptions(buffer):
    # 0.5 s is before the first sample: pending (older data may still come) until the
    # window moves past it.
    first = buffer.wait_for_transform_async("map", "odom", 0.5)
    second = buffer.wait_for_transform_async("map", "odom", 0.5)
    assert not first.done()
    buffer.set_transform(make_transform("map", "odom", stamp=30), "test")
    buffer.set_transform(make_transform("map", "odom", stamp=31), "test")
    errors = [first.exception(0), second.exception(0)]
    assert all(isinstance(e, BackwardExtrapolationException) for e in errors)
    assert errors[0] is not errors[1] and str(errors[0]) == str(errors[1])


def test_future_cancelled_while_others_resolve_is_skipped(buffer):
    first = buffer.wait_for_transform_async("map", "odom", 3)
    second = buffer.wait_for_transform_async("map", "odom", 3)
    first.add_done_callback(lambda _f: second.cancel())
    second.add_done_callback(lambda _f: first.cancel())
    buffer.set_transform(make_transform("map", "odom", stamp=3), "test")
    # whichever was resolved first cancelled the other before it could be resolved
    assert sorted([first.cancelled(), second.cancelled()]) == [False, True]
    assert buffer.pending_request_count == 0


def test_request_before_the_first_sample_is_resolved_by_older_data(buffer):
    future = buffer.wait_for_transform_async("map", "odom", 0.5)
    assert not future.done()
    buffer.set_transform(make_transform("map", "odom", (0.0, 0.0, 0.0), stamp=0.25), "test")
    assert future.result(0).transform.translation.x == pytest.approx(1.0 / 3.0)


def test_a_loop_elsewhere_in_the_tree_does_not_stop_the_wake_up():
    """A loop above the fixed frame (a -> b -> a) makes tf2 refuse the latest-common-time
    walk, but a full lookup from d to a through a needs none of it: the insertion that gives
    d data at the requested time answers the request (found by the property test)."""
    buffer = Buffer(cache_time=4.0)
    buffer.set_transform(make_transform("a", "b", (0.5, 0, 0), stamp=0.5), "p")
    buffer.set_transform_static(make_transform("b", "a", (1, 2, 3)), "p")
    buffer.set_transform(make_transform("a", "d", (7.0, 0, 0), stamp=7.0), "p")
    future = buffer.wait_for_transform_full_async("d", 3.0, "a", 0.0, "a")
    assert not future.done()
    buffer.set_transform(make_transform("a", "d", (3.0, 0, 0), stamp=3.0), "p")
    assert future.done()
    assert future.result().transform.translation.x == pytest.approx(-3.0)
    assert buffer.pending_request_count == 0


def test_a_sample_under_another_parent_at_an_older_time_wakes_a_disconnected_request():
    """c's latest parent is d (at 1.0); a sample at 0.5 under a gives c another parent at
    that time only, which connects a lookup at 0.5 although c's latest parent is unchanged."""
    buffer = Buffer()
    buffer.set_transform(make_transform("a", "b", (1, 0, 0), stamp=0.5), "p")
    buffer.set_transform(make_transform("d", "c", (2, 0, 0), stamp=1.0), "p")
    future = buffer.wait_for_transform_full_async("a", 0.0, "c", 0.5, "a")
    assert not future.done()
    buffer.set_transform(make_transform("a", "c", (3, 0, 0), stamp=0.5), "p")
    assert future.done()
    assert future.result().transform.translation.x == pytest.approx(3.0)
    assert buffer.pending_request_count == 0

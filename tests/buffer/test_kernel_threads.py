"""The kernel's own lock: batch lookups and batch inserts release the GIL, readers share the
lock, and every answer stays right while threads insert, look up and list frames at once
(the stress test docs/kernel.md runs once under ThreadSanitizer)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tf2py.buffer.buffer import Buffer
from tf2py.buffer.core import BufferCore
from tf2py.buffer.exceptions import LookupException, TransformException
from tf2py.buffer.messages import make_transform
from tf2py.buffer.time import Time

S = 1_000_000_000
DEPTH = 4
FRAMES = ["f%d" % i for i in range(DEPTH + 1)]


def rows_at(stamps_ns: np.ndarray) -> np.ndarray:
    """Every link moves along x at 1 unit per second: T(f_i <- f_i+1).x = t (seconds)."""
    rows = np.zeros((len(stamps_ns), 7))
    rows[:, 0] = stamps_ns / S
    rows[:, 6] = 1.0
    return rows


def fill(core: BufferCore, start_s: int, count: int) -> None:
    stamps = (start_s * S + np.arange(count, dtype=np.int64) * (S // 100)).astype(np.int64)
    for i in range(DEPTH):
        result = core.set_transforms(FRAMES[i], FRAMES[i + 1], stamps, rows_at(stamps), "test")
        assert result.stored == count, result


def run_threads(targets: list, seconds: float) -> list[BaseException]:
    """Run each target(stop) on its own thread for about `seconds`; the errors they raised."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def guarded(target):
        try:
            target(stop)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True, name="stress-%d" % k)
               for k, t in enumerate(targets)]
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join(60.0)
        assert not thread.is_alive(), "a stress thread did not finish"
    return errors


@pytest.mark.parametrize("buffer_class", [BufferCore, Buffer])
def test_concurrent_batch_inserts_lookups_and_listings_stay_correct(buffer_class):
    core = buffer_class(cache_time=10_000.0)
    fill(core, 1000, 1000)  # 1000 s .. 1010 s, never pruned, looked up by the readers
    rng = np.random.default_rng(1)
    inserted = {"next_s": 2000}

    def batch_writer(stop):
        while not stop.is_set():
            fill(core, inserted["next_s"], 200)
            inserted["next_s"] += 10

    def single_writer(stop):
        t = 5000 * S
        while not stop.is_set():
            t += S // 10
            assert core.set_transform(make_transform("f0", "side", (1.0, 0.0, 0.0), stamp=Time.from_nanoseconds(t)), "s")

    def batch_reader(stop):
        while not stop.is_set():
            seconds = np.sort(rng.uniform(1000.0, 1009.99, 500))
            matrices = core.lookup_transforms("f0", FRAMES[-1], seconds)
            ns = np.rint(seconds * 1e9)
            assert np.allclose(matrices[:, 0, 3], DEPTH * ns / S, rtol=0, atol=1e-9)
            assert np.allclose(matrices[:, :3, :3], np.eye(3))

    def single_reader(stop):
        while not stop.is_set():
            t = 1000 * S + int(rng.integers(0, 999 * S // 100))
            out = core.lookup_transform("f0", FRAMES[-1], Time.from_nanoseconds(t))
            assert abs(out.transform.translation.x - DEPTH * t / S) < 1e-9
            assert core.can_transform(FRAMES[1], FRAMES[-1], Time.from_nanoseconds(t))
            assert set(FRAMES) <= set(core.get_frames())
            assert "Frame f1 exists with parent f0." in core.all_frames_as_string()

    errors = run_threads([batch_writer, single_writer, batch_reader, batch_reader, single_reader], 3.0)
    assert not errors, errors
    assert inserted["next_s"] > 2000  # the writer ran
    assert core.get_parent("f4", 1005.0) == "f3"


def test_batch_lookup_releases_the_gil():
    """Another Python thread runs while a long lookup_transforms is inside the kernel."""
    core = BufferCore(cache_time=10_000.0)
    fill(core, 1000, 1000)
    seconds = np.sort(np.random.default_rng(2).uniform(1000.0, 1009.99, 400_000))
    ticks: list[int] = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter_ns())

    thread = threading.Thread(target=ticker, daemon=True, name="ticker")
    thread.start()
    try:
        deadline = time.monotonic() + 60.0
        overlapped = False
        while not overlapped and time.monotonic() < deadline:
            while not ticks:  # the ticker runs
                time.sleep(0.001)
            start = time.perf_counter_ns()
            core.lookup_transforms("f0", FRAMES[-1], seconds)
            end = time.perf_counter_ns()
            # Ticks strictly inside the call: only possible if it let go of the GIL.
            inside = [t for t in list(ticks) if start < t < end]
            overlapped = len(inside) >= 2
            ticks.clear()
    finally:
        stop.set()
        thread.join(10.0)
    assert overlapped, "no other thread ran during 400 000 lookups: the GIL was held"


def test_buffer_wait_is_woken_by_a_batch_insert_on_another_thread():
    buffer = Buffer(cache_time=10_000.0)
    fill(buffer, 1000, 10)
    done = threading.Event()
    result = {}

    def reader():
        result["t"] = buffer.lookup_transform("f0", FRAMES[-1], 3000.0, timeout=30.0)
        done.set()

    thread = threading.Thread(target=reader, daemon=True, name="reader")
    thread.start()
    deadline = time.monotonic() + 30.0
    while buffer._waiting < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    fill(buffer, 2999, 200)  # covers 3000 s
    assert done.wait(30.0)
    thread.join(10.0)
    assert abs(result["t"].transform.translation.x - DEPTH * 3000.0) < 1e-6


@pytest.mark.parametrize("buffer_class", [BufferCore, Buffer])
def test_a_lookup_racing_the_insert_of_its_frame_raises_a_lookup_error_or_answers(buffer_class):
    """A frame added by another thread between the kernel's answer and the wording of its
    error: the lookup raises tf2's LookupException for the frame as it was (or answers, if the
    insert came first), never a bare TransformException."""
    core = buffer_class()
    core.set_transform(make_transform("map", "odom", stamp=Time(1)), "test")
    added = {"next": 0}
    outcomes = {"answered": 0, "missing": 0}

    def adder(stop):
        while not stop.is_set() and added["next"] < 200_000:
            core.set_transform(make_transform("odom", "n%d" % added["next"], stamp=Time(1)), "t")
            added["next"] += 1

    def looker(stop):
        while not stop.is_set():
            name = "n%d" % (added["next"] + 1)
            try:
                core.lookup_transform("map", name, Time())
                outcomes["answered"] += 1
            except LookupException as exc:
                assert ('"%s" passed to lookupTransform argument source_frame does not exist'
                        % name) in str(exc), exc
                outcomes["missing"] += 1
            except TransformException as exc:
                raise AssertionError("not tf2's error for a missing frame: %r" % exc) from exc

    errors = run_threads([adder, looker], 2.0)
    assert not errors, errors
    assert outcomes["missing"] > 0 and added["next"] > 0, outcomes


def test_an_error_record_for_a_frame_that_exists_by_now_still_says_it_did_not():
    """The deterministic half of the race above: the kernel's record names a frame that was
    missing when it looked; Python words it once the frame is there."""
    from tf2py.buffer.errors import query_error

    core = BufferCore()
    core.set_transform(make_transform("map", "odom", stamp=Time(1)), "test")
    record = (1, 1, 0, 0, 0, None, None, 0)  # frame error, argument 1 (source_frame)
    error = query_error(core, record, ("map", "odom"))
    assert type(error) is LookupException
    assert str(error).startswith(
        '"odom" passed to lookupTransform argument source_frame does not exist.')

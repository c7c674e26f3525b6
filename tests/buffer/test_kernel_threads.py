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


#: How long a stress thread may take before the test calls it hung (a deadline, not a window:
#: the work is bounded by counts and ends long before on any machine).
HANG_SECONDS = 120.0
#: Rounds each looping thread completes at least, the last ones after every worker is done.
MIN_ROUNDS = 3


def run_threads(workers: list, loopers: list) -> list[BaseException]:
    """Run each worker() to its end (its work bounded by a count) and each looper(done) on
    threads of their own, all started together; a looper repeats its round until ``done``
    (every worker finished, or one raised) and it has done MIN_ROUNDS. The errors raised."""
    done = threading.Event()
    start = threading.Barrier(len(workers) + len(loopers))
    errors: list[BaseException] = []

    def guarded(body):
        try:
            start.wait(HANG_SECONDS)
            body()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
            done.set()

    def looping(round_):
        rounds = 0
        while not (done.is_set() and rounds >= MIN_ROUNDS):
            round_()
            rounds += 1

    threads = [threading.Thread(target=guarded, args=(w,), daemon=True, name="worker-%d" % k)
               for k, w in enumerate(workers)]
    threads += [threading.Thread(target=guarded, args=(lambda r=r: looping(r),), daemon=True,
                                 name="looper-%d" % k) for k, r in enumerate(loopers)]
    for thread in threads:
        thread.start()
    for thread in threads[:len(workers)]:
        thread.join(HANG_SECONDS)
        assert not thread.is_alive(), "a worker thread did not finish"
    done.set()
    for thread in threads[len(workers):]:
        thread.join(HANG_SECONDS)
        assert not thread.is_alive(), "a looping thread did not finish"
    return errors


CACHE_S = 10_000
BATCH = 200  # stamps per batch, 10 ms apart: one batch spans 2 s
BATCHES = 250  # batch k covers 2000 + 2k s .. + 1.99 s: the newest stamp is below 2500 s
SINGLES_PER_BATCH = 40  # single inserts alongside each batch: 5000.1 s, 5000.2 s, ... 6000 s
SINGLES = SINGLES_PER_BATCH * BATCHES


@pytest.mark.parametrize("buffer_class", [BufferCore, Buffer])
def test_concurrent_batch_inserts_lookups_and_listings_stay_correct(buffer_class):
    core = buffer_class(cache_time=float(CACHE_S))
    fill(core, 1000, 1000)  # 1000 s .. 1010 s, looked up by the readers
    # The writers' work is bounded by count, so their newest stamp is bounded too and stays
    # within the cache of the readers' data, however fast the machine: nothing is pruned.
    assert 2000 + 2 * BATCHES < 1000 + CACHE_S and 5000 + SINGLES / 10 < 1000 + CACHE_S
    rng = np.random.default_rng(1)

    progress = threading.Condition()
    batches = {"done": 0, "over": False}

    def batch_writer():
        try:
            for k in range(BATCHES):
                fill(core, 2000 + 2 * k, BATCH)
                with progress:
                    batches["done"] = k + 1
                    progress.notify_all()
        finally:
            with progress:
                batches["over"] = True
                progress.notify_all()

    def single_writer():
        # Paced by the batch writer's progress (not by a clock), so the two overlap throughout.
        for k in range(SINGLES):
            if k % SINGLES_PER_BATCH == 0:
                with progress:
                    progress.wait_for(lambda: batches["done"] >= k // SINGLES_PER_BATCH
                                      or batches["over"], HANG_SECONDS)
            stamp = Time.from_nanoseconds(5000 * S + (k + 1) * (S // 10))
            side = make_transform("f0", "side", (1.0, 0.0, 0.0), stamp=stamp)
            assert core.set_transform(side, "s")

    def batch_reader():
        seconds = np.sort(rng.uniform(1000.0, 1009.99, 500))
        matrices = core.lookup_transforms("f0", FRAMES[-1], seconds)
        ns = np.rint(seconds * 1e9)
        assert np.allclose(matrices[:, 0, 3], DEPTH * ns / S, rtol=0, atol=1e-9)
        assert np.allclose(matrices[:, :3, :3], np.eye(3))

    def single_reader():
        t = 1000 * S + int(rng.integers(0, 999 * S // 100))
        out = core.lookup_transform("f0", FRAMES[-1], Time.from_nanoseconds(t))
        assert abs(out.transform.translation.x - DEPTH * t / S) < 1e-9
        assert core.can_transform(FRAMES[1], FRAMES[-1], Time.from_nanoseconds(t))
        assert set(FRAMES) <= set(core.get_frames())
        assert "Frame f1 exists with parent f0." in core.all_frames_as_string()

    errors = run_threads([batch_writer, single_writer], [batch_reader, batch_reader, single_reader])
    assert not errors, errors
    assert core.get_parent("f4", 1005.0) == "f3"
    # Everything every thread wrote is there, exact: the readers' data, each writer's first
    # and last stamps, and the last single insert.
    for start_s in (1000, 2000, 2000 + 2 * (BATCHES - 1)):
        seconds = start_s + np.arange(BATCH) / 100
        matrices = core.lookup_transforms("f0", FRAMES[-1], seconds)
        assert np.allclose(matrices[:, 0, 3], DEPTH * np.rint(seconds * 1e9) / S, rtol=0, atol=1e-9)
    last_stamp = Time.from_nanoseconds(5000 * S + SINGLES * (S // 10))
    last = core.lookup_transform("f0", "side", last_stamp)
    assert last.transform.translation.x == 1.0


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
    while buffer._index.waiting < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    fill(buffer, 2999, 200)  # covers 3000 s
    assert done.wait(30.0)
    thread.join(10.0)
    assert abs(result["t"].transform.translation.x - DEPTH * 3000.0) < 1e-6


ADDS = 50_000


@pytest.mark.parametrize("buffer_class", [BufferCore, Buffer])
def test_a_lookup_racing_the_insert_of_its_frame_raises_a_lookup_error_or_answers(buffer_class):
    """A frame added by another thread between the kernel's answer and the wording of its
    error: the lookup raises tf2's LookupException for the frame as it was (or answers, if the
    insert came first), never a bare TransformException."""
    core = buffer_class()
    core.set_transform(make_transform("map", "odom", stamp=Time(1)), "test")
    added = {"next": 0}
    outcomes = {"answered": 0, "missing": 0}

    def adder():
        while added["next"] < ADDS:
            core.set_transform(make_transform("odom", "n%d" % added["next"], stamp=Time(1)), "t")
            added["next"] += 1

    def looker():
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

    errors = run_threads([adder], [looker])
    assert not errors, errors
    # The last rounds, after the adder is done, look up a frame never added.
    assert outcomes["missing"] > 0 and added["next"] == ADDS, outcomes
    assert len(core.get_frames()) == ADDS + 2


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

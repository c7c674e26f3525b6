"""Buffer.lookup_transform_async / lookup_transform_full_async: coroutines awaited from asyncio,
woken by the insertion made on another thread (a real TransformListener's among them),
cancelled cleanly with their task, bounded by their timeout."""

from __future__ import annotations

import asyncio
import threading

import pytest

from helpers import wait_for
from tf2py import (
    Buffer,
    ExtrapolationException,
    InvalidArgumentException,
    LookupException,
    Time,
    make_transform,
)
from tf2py.transport.broadcaster import TransformBroadcaster
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq.core import Core


@pytest.fixture
def buffer():
    buffer = Buffer(cache_time=10.0)
    buffer.set_transform_static(make_transform("map", "odom", (1, 0, 0)), "test")
    return buffer


def _insert_when_waiting(buffer: Buffer, transform, count: int = 1) -> threading.Thread:
    """A thread that inserts ``transform`` once ``count`` requests wait in the buffer."""

    def run():
        wait_for(lambda: buffer.pending_request_count >= count, message="the request waits")
        buffer.set_transform(transform, "inserter")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_lookup_awaited_is_woken_by_an_insertion_on_another_thread(buffer):
    async def main():
        thread = _insert_when_waiting(
            buffer, make_transform("odom", "base_link", (0, 2, 0), stamp=5.0))
        result = await buffer.lookup_transform_async("map", "base_link", Time(5))
        thread.join()
        return result

    result = asyncio.run(main())
    assert (result.header.frame_id, result.child_frame_id) == ("map", "base_link")
    assert result.transform.translation.y == 2
    assert buffer.pending_request_count == 0


def test_the_event_loop_runs_other_tasks_while_a_lookup_waits(buffer):
    ticks = []

    async def ticker(stop: asyncio.Event):
        while not stop.is_set():
            ticks.append(1)
            await asyncio.sleep(0)

    async def main():
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        thread = _insert_when_waiting(buffer, make_transform("odom", "late", (1, 0, 0), stamp=1))
        result = await buffer.lookup_transform_async("map", "late", 0)
        stop.set()
        await task
        thread.join()
        return result

    assert asyncio.run(main()).child_frame_id == "late"
    assert len(ticks) > 1  # the loop was never blocked by the wait


def test_a_lookup_possible_now_returns_at_once(buffer):
    result = asyncio.run(buffer.lookup_transform_async("map", "odom", 0))
    assert result.transform.translation.x == 1
    assert buffer.pending_request_count == 0


def test_cancelling_the_task_withdraws_the_request(buffer):
    async def main():
        task = asyncio.create_task(buffer.lookup_transform_async("map", "never", 0))
        await asyncio.sleep(0)  # let it start and register its request
        while buffer.pending_request_count == 0:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert buffer.pending_request_count == 0
    assert not buffer._index.requests and not buffer._index._watch and not buffer._index._watch_any


def test_a_timeout_raises_what_tf2_raises_then_with_the_wait(buffer):
    with pytest.raises(LookupException, match="timeout was 0.05"):
        asyncio.run(buffer.lookup_transform_async("map", "never", 0, timeout=0.05))
    assert buffer.pending_request_count == 0


def test_timeout_zero_does_not_wait(buffer):
    with pytest.raises(LookupException):
        asyncio.run(buffer.lookup_transform_async("map", "never", 0, timeout=0.0))
    assert buffer.pending_request_count == 0


def test_an_invalid_argument_raises_at_once(buffer):
    with pytest.raises(InvalidArgumentException):
        asyncio.run(buffer.lookup_transform_async("", "odom", 0))
    with pytest.raises(InvalidArgumentException):
        asyncio.run(buffer.lookup_transform_async("map", "/odom", 0, timeout=5.0))
    with pytest.raises(TypeError):
        asyncio.run(buffer.lookup_transform_async("map", 7, 0))
    assert buffer.pending_request_count == 0


def test_the_full_form_waits_for_both_halves(buffer):
    buffer.set_transform(make_transform("map", "robot", (0, 0, 0), stamp=1.0), "test")

    async def main():
        thread = _insert_when_waiting(
            buffer, make_transform("map", "robot", (4, 0, 0), stamp=3.0))
        result = await buffer.lookup_transform_full_async(
            "robot", Time(3), "robot", Time(1), "map", timeout=30.0)
        thread.join()
        return result

    result = asyncio.run(main())
    assert result.transform.translation.x == pytest.approx(-4)
    with pytest.raises(ExtrapolationException, match="timeout was"):
        asyncio.run(buffer.lookup_transform_full_async(
            "robot", Time(9), "robot", Time(1), "map", timeout=0.05))
    assert buffer.pending_request_count == 0


def test_many_lookups_awaited_at_once_are_woken_by_a_real_listener():
    buffer = Buffer(cache_time=10.0)
    with Core("tcp://127.0.0.1:0") as core, TransformListener(buffer, core.address), \
            TransformBroadcaster(core.address) as broadcaster:

        async def main():
            lookups = [buffer.lookup_transform_async("map", f"arm_{i % 5}", 0, timeout=30.0)
                       for i in range(50)]
            tasks = [asyncio.ensure_future(lookup) for lookup in lookups]
            while buffer.pending_request_count < 50:
                await asyncio.sleep(0.001)
            # the listener's thread inserts; the broadcaster repeats until all are answered
            while not all(task.done() for task in tasks):
                broadcaster.send_transform(
                    [make_transform("map", f"arm_{i}", (i, 0, 0), stamp=1.0) for i in range(5)])
                await asyncio.wait(tasks, timeout=0.05)
            return [task.result() for task in tasks]

        results = asyncio.run(main())
    assert [r.child_frame_id for r in results] == [f"arm_{i % 5}" for i in range(50)]
    assert buffer.pending_request_count == 0

"""``Buffer.lookup_transform_async`` and ``lookup_transform_full_async``: lookups awaited from
asyncio (as tf2_ros's Python ``Buffer.lookup_transform_async`` is awaited from rclpy).

Each is one request in the buffer's index of waiting requests (``requests.py``, through
``wait_for_transform_async``): the insertion that makes the lookup possible resolves its
``concurrent.futures.Future`` on the inserting thread, and ``asyncio.wrap_future`` hands the
outcome to the event loop with ``loop.call_soon_threadsafe`` (no polling, no thread waiting).
Cancelling the awaiting task cancels that future, which takes the request out of the index
at once; a timeout does the same, then raises what tf2 raises at that moment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from time import monotonic
from typing import Any

from .exceptions import InvalidArgumentException, TransformException
from .time import duration_to_nanoseconds
from .waits import waited_message

__all__ = ["lookup_transform_async", "lookup_transform_full_async"]


async def _awaited(future: Future[Any], timeout: Any, lookup_now: Callable[[], Any]) -> Any:
    """The outcome of ``future``, waiting at most ``timeout`` (None: no limit; <= 0: none)."""
    if timeout is None:
        return await asyncio.wrap_future(future)
    timeout_s = duration_to_nanoseconds(timeout, "timeout") / 1e9
    start = monotonic()
    if timeout_s > 0:
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except asyncio.TimeoutError:
            pass  # wait_for cancelled the future: the request has left the index
    else:
        future.cancel()
        if not future.cancelled():  # resolved already: possible now, or never
            return future.result()
    try:
        return lookup_now()  # what tf2 raises now (or the transform, if it just came)
    except InvalidArgumentException:
        raise
    except TransformException as exc:
        if timeout_s > 0:
            exc.args = (waited_message(exc, monotonic() - start, timeout_s),)
        raise


async def lookup_transform_async(self: Any, target_frame: str, source_frame: str, time: Any,
                                 timeout: Any = None) -> Any:
    """The ``TransformStamped`` of ``lookup_transform(target_frame, source_frame, time)``,
    awaited: data in ``source_frame`` at ``time`` (0 = latest common time) expressed in
    ``target_frame``. Woken by the insertion that makes it possible. ``timeout`` (seconds or
    a Duration; None: no limit; 0: do not wait) bounds the wait; when it runs out, tf2's
    exception is raised with the wait in its message. An invalid argument, or a time older
    than the cache can hold again, raises at once. Cancelling the task withdraws the request.
    """
    future = self.wait_for_transform_async(target_frame, source_frame, time)
    return await _awaited(
        future, timeout, lambda: self.lookup_transform(target_frame, source_frame, time))


async def lookup_transform_full_async(self: Any, target_frame: str, target_time: Any,
                                      source_frame: str, source_time: Any, fixed_frame: str,
                                      timeout: Any = None) -> Any:
    """The time-travel form of ``lookup_transform_async``: ``source_frame`` at
    ``source_time`` into ``target_frame`` at ``target_time``, through ``fixed_frame``."""
    future = self.wait_for_transform_full_async(
        target_frame, target_time, source_frame, source_time, fixed_frame)
    return await _awaited(future, timeout, lambda: self.lookup_transform_full(
        target_frame, target_time, source_frame, source_time, fixed_frame))

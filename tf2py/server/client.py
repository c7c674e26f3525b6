"""BufferClient: lookup_transform through a BufferServer, with the results and exceptions of a
local Buffer.

Two ways a goal travels, both safe from many threads (a link has one user at a time):

- Futures (``lookup_transform_async``): one link owned by a background I/O thread
  (``client_io.py``). ``future.cancel()`` cancels the goal on the server too. The future is a
  ``concurrent.futures.Future``; in asyncio, ``await asyncio.wrap_future(future)`` (cancelling
  the awaiting task cancels the goal), or ``await client.lookup_transform_coroutine(...)``.
- Blocking calls (``lookup_transform``, ``can_transform``...): the calling thread's own link
  (made on its first call, closed with the client or when the thread ends), which it sends on
  and waits on itself until the answer or ``timeout + timeout_padding``. This saves two
  thread hand-offs per lookup, which is most of a lookup's cost on the client.

The address's scheme picks the link (``link.py``). When the connection to the server comes
back after a drop (server restarted), every goal still waiting is sent again with the timeout
it has left, so a restart costs a waiting caller only the down time.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Any

from ..buffer.exceptions import TimeoutException, TransformException
from ..buffer.time import duration_to_nanoseconds
from ..transport.address import server_address
from ..transport.zmq.keys import load_keys
from . import protocol
from .client_common import (
    Goal,
    ServerTimeoutException,
    answers_the_goal,
    check_frame,
    no_answer,
    refused_answer,
    time_ns,
    timeout_ns,
    unreachable,
)
from .client_io import FutureIO
from .limits import BATCH
from .link import ClientLink, open_client_link
from .protocol import RESULT, ProtocolError

__all__ = ["BufferClient", "ServerTimeoutException"]

# The longest single wait (s): far deadlines are reached in several waits.
_MAX_WAIT_S = 3600.0
# On the main thread a blocking lookup waits in short slices: Ctrl-C's SIGINT may be delivered
# to any thread of the process, and Python runs its handler (KeyboardInterrupt) only when the
# main thread returns to the interpreter, so a long wait would hold the interrupt back.
_MAIN_THREAD_WAIT_S = 0.1


class _Channel:
    """One calling thread's own link for blocking lookups."""

    __slots__ = ("link", "in_use", "closed", "__weakref__")

    def __init__(self, link: ClientLink) -> None:
        self.link = link
        self.in_use = False
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.link.close()


class _ThreadToken:
    """Lives in a thread's threading.local: when the thread ends it is freed, and its
    finalizer closes that thread's channel."""

    __slots__ = ("channel", "__weakref__")

    def __init__(self, channel: _Channel) -> None:
        self.channel = channel


#: A lookup goal's fields before its timeout: target_frame, source_frame, source_time_ns,
#: target_time_ns, fixed_frame, advanced (what ``_ClientState.submit`` and ``call`` take).
_GoalFields = tuple[str, str, int, int, str, bool]


def _simple_goal(target_frame: Any, source_frame: Any, time: Any) -> _GoalFields:
    """A lookup's goal fields (frames checked, times in ns) before its timeout: the simple
    form, ``source_frame`` into ``target_frame`` at ``time``."""
    t = time_ns(time)
    return (check_frame(target_frame, "target_frame"), check_frame(source_frame, "source_frame"),
            t, t, "", False)


def _full_goal(target_frame: Any, target_time: Any, source_frame: Any, source_time: Any,
               fixed_frame: Any) -> _GoalFields:
    """The goal fields of the time-travel form (``fixed_frame`` does not change over time)."""
    target_ns = time_ns(target_time)
    source_ns = time_ns(source_time)
    return (check_frame(target_frame, "target_frame"), check_frame(source_frame, "source_frame"),
            source_ns, target_ns, check_frame(fixed_frame, "fixed_frame"), True)


def _forget_channel(state_ref: weakref.ref[_ClientState], channel: _Channel) -> None:
    """The thread that used ``channel`` has ended: close it."""
    state = state_ref()
    if state is None:
        return
    with state._channels_lock:
        if channel in state._channels and not channel.in_use:
            state._channels.discard(channel)
            channel.close()


class BufferClient:
    """Remote ``lookup_transform`` / ``can_transform`` through a BufferServer.

    ``address``: the server (None means ``$TF2PY_SERVER``, else ``tcp://127.0.0.1:7402``).
    ``timeout_padding`` (seconds or Duration): how much longer than a goal's own timeout to
    wait for the server's answer before raising ``TimeoutException``. Safe to use from many
    threads at once; ``close()`` (or the context manager) ends its thread and sockets. A
    client dropped without ``close()`` is closed when it is collected (its I/O thread holds
    only the inner state, never this object).

    Only an answer naming the frames asked is accepted: an answer for other frames (a
    stranger standing in for the server) is refused, counted in ``refused_answers`` and
    logged once; the goal keeps waiting for a true answer.
    """

    def __init__(self, address: str | None = None, timeout_padding: Any = 2.0,
                 keys: Any = None) -> None:
        self._state = _ClientState(address, timeout_padding, keys)
        self.address: str = self._state.address
        self.timeout_padding = timeout_padding
        self._finalizer = weakref.finalize(self, _ClientState.close, self._state)
        self._finalizer.atexit = False

    def lookup_transform_async(self, target_frame: str, source_frame: str, time: Any,
                               timeout: Any = 0.0) -> Future[Any]:
        """A ``concurrent.futures.Future`` resolved with the TransformStamped that maps data in
        ``source_frame`` into ``target_frame`` at ``time`` (0 = latest common time), or with
        tf2's exception. The server waits up to ``timeout`` for the data; ``future.cancel()``
        cancels the goal on the server too. In asyncio: ``await asyncio.wrap_future(...)``."""
        return self._state.submit(*_simple_goal(target_frame, source_frame, time), timeout)

    def lookup_transform_full_async(
        self, target_frame: str, target_time: Any, source_frame: str, source_time: Any,
        fixed_frame: str, timeout: Any = 0.0,
    ) -> Future[Any]:
        """The time-travel form of ``lookup_transform_async``: ``source_frame`` at
        ``source_time`` into ``target_frame`` at ``target_time``, through ``fixed_frame``."""
        return self._state.submit(*_full_goal(target_frame, target_time, source_frame,
                                             source_time, fixed_frame), timeout)

    async def lookup_transform_coroutine(self, target_frame: str, source_frame: str, time: Any,
                                         timeout: Any = 0.0) -> Any:
        """``lookup_transform_async`` awaited from asyncio: the answer wakes the awaiting task
        (no thread blocks); cancelling the task cancels the goal on the server."""
        return await asyncio.wrap_future(
            self.lookup_transform_async(target_frame, source_frame, time, timeout))

    async def lookup_transform_full_coroutine(
        self, target_frame: str, target_time: Any, source_frame: str, source_time: Any,
        fixed_frame: str, timeout: Any = 0.0,
    ) -> Any:
        """The time-travel form of ``lookup_transform_coroutine``."""
        return await asyncio.wrap_future(self.lookup_transform_full_async(
            target_frame, target_time, source_frame, source_time, fixed_frame, timeout))

    def lookup_transform(self, target_frame: str, source_frame: str, time: Any,
                         timeout: Any = 0.0) -> Any:
        """The TransformStamped that maps data in ``source_frame`` into ``target_frame`` at
        ``time`` (0 = latest common time), waiting up to ``timeout`` seconds for the data.

        Raises what a local Buffer raises (LookupException, ConnectivityException, the
        ExtrapolationException subclasses, InvalidArgumentException), and TimeoutException when
        the server does not answer within ``timeout + timeout_padding``.
        """
        return self._state.call(*_simple_goal(target_frame, source_frame, time), timeout)

    def lookup_transform_full(
        self, target_frame: str, target_time: Any, source_frame: str, source_time: Any,
        fixed_frame: str, timeout: Any = 0.0,
    ) -> Any:
        """The time-travel lookup: data in ``source_frame`` at ``source_time`` into
        ``target_frame`` at ``target_time``, ``fixed_frame`` being the frame that does not
        change over time. Raises as ``lookup_transform``."""
        return self._state.call(*_full_goal(target_frame, target_time, source_frame,
                                             source_time, fixed_frame), timeout)

    def can_transform(self, target_frame: str, source_frame: str, time: Any,
                      timeout: Any = 0.0) -> bool:
        """Whether ``lookup_transform`` would succeed (waiting up to ``timeout``). False for a
        tf2 error; TimeoutException if the server itself does not answer."""
        try:
            self.lookup_transform(target_frame, source_frame, time, timeout)
        except ServerTimeoutException:
            raise
        except TransformException:
            return False
        return True

    def can_transform_full(
        self, target_frame: str, target_time: Any, source_frame: str, source_time: Any,
        fixed_frame: str, timeout: Any = 0.0,
    ) -> bool:
        """Whether ``lookup_transform_full`` would succeed; as ``can_transform``."""
        try:
            self.lookup_transform_full(
                target_frame, target_time, source_frame, source_time, fixed_frame, timeout)
        except ServerTimeoutException:
            raise
        except TransformException:
            return False
        return True

    @property
    def pending_count(self) -> int:
        """Goals sent and not answered yet."""
        return len(self._state.io.goals)

    @property
    def refused_answers(self) -> int:
        """Answers refused because they named other frames than the goal asked."""
        return self._state.refused_answers

    @property
    def _channels(self) -> set[_Channel]:
        return self._state._channels

    def close(self) -> None:
        """Cancel the goals still waiting (on the server too), end the I/O thread, close the
        sockets. Callers still waiting get a TimeoutException."""
        self._finalizer()

    def __enter__(self) -> BufferClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BufferClient(address={self.address!r})"


class _ClientState:
    """Everything the I/O thread and the calling threads use (see BufferClient)."""

    def __init__(self, address: str | None, timeout_padding: Any, keys: Any) -> None:
        self.address = server_address(address)  # its link checks it as it opens (FutureIO)
        self._keys = load_keys(keys)  # keys folder, else $TF2PY_KEYS, else plain
        self._padding_ns = max(0, duration_to_nanoseconds(timeout_padding, "timeout_padding"))
        self._ids = itertools.count(1)
        self._closed = False
        self._channels_lock = threading.Lock()
        self._channels: set[_Channel] = set()
        self._local = threading.local()
        self.refused_answers = 0
        self._refusal_logged = False
        self.io = FutureIO(self.address, self._keys, self._padding_ns, self._refuse_answer)

    def close(self) -> None:
        """Cancel the goals still waiting (on the server too), end the I/O thread, close the
        links. Callers still waiting get a TimeoutException."""
        with self._channels_lock:
            if self._closed:
                return
            self._closed = True
            # Idle channels close now; one in use is woken, and closes as its call ends
            for channel in list(self._channels):
                if not channel.in_use:
                    self._channels.discard(channel)
                    channel.close()
                else:
                    channel.link.wake()
        self.io.close()

    def _refuse_answer(self) -> None:
        self.refused_answers += 1
        if not self._refusal_logged:
            self._refusal_logged = True
            logging.getLogger("tf2py.server").warning(
                "tf2py BufferClient: %s (logged once)", refused_answer(self.address))

    def submit(self, target_frame: str, source_frame: str, source_time_ns: int,
               target_time_ns: int, fixed_frame: str, advanced: bool,
               timeout: Any) -> Future[Any]:
        """A goal sent by the I/O thread; its future."""
        goal_timeout_ns = timeout_ns(timeout)
        goal_id = next(self._ids)
        now = time.monotonic_ns()
        goal = Goal(
            Future(), target_frame, source_frame, source_time_ns, target_time_ns, fixed_frame,
            advanced, goal_timeout_ns, now, now + goal_timeout_ns + self._padding_ns,
            protocol.pack_goal(goal_id, target_frame, source_frame, source_time_ns,
                               target_time_ns, fixed_frame, advanced, goal_timeout_ns))
        return self.io.submit(goal_id, goal)

    def _channel(self) -> _Channel:
        token = getattr(self._local, "token", None)
        if token is not None and not token.channel.closed:
            channel: _Channel = token.channel
            return channel
        with self._channels_lock:
            if self._closed:
                raise RuntimeError("BufferClient is closed")
            channel = _Channel(open_client_link(self.address, self._keys))
            self._channels.add(channel)
        token = _ThreadToken(channel)
        weakref.finalize(token, _forget_channel, weakref.ref(self), channel)
        self._local.token = token
        return channel

    def call(self, target_frame: str, source_frame: str, source_time_ns: int,
             target_time_ns: int, fixed_frame: str, advanced: bool, timeout: Any) -> Any:
        """A blocking lookup on the calling thread's own link."""
        goal_timeout_ns = timeout_ns(timeout)
        channel = self._channel()
        goal_id = next(self._ids)
        sent_ns = time.monotonic_ns()
        deadline_ns = sent_ns + goal_timeout_ns + self._padding_ns
        with self._channels_lock:
            if self._closed:
                raise RuntimeError("BufferClient is closed")
            channel.in_use = True
        link = channel.link
        try:
            if not link.send(protocol.pack_goal(
                    goal_id, target_frame, source_frame, source_time_ns, target_time_ns,
                    fixed_frame, advanced, goal_timeout_ns)):
                raise ServerTimeoutException(unreachable(self.address))
            slice_s = _MAIN_THREAD_WAIT_S if threading.current_thread() is \
                threading.main_thread() else _MAX_WAIT_S
            while True:
                wait_ns = deadline_ns - time.monotonic_ns()
                if wait_ns <= 0:
                    link.send(protocol.pack_cancel(goal_id))
                    raise ServerTimeoutException(no_answer(
                        self.address, time.monotonic_ns() - sent_ns, goal_timeout_ns,
                        self._padding_ns))
                link.wait(min(wait_ns / 1e9, slice_s))
                for _ in range(BATCH):
                    received = link.receive(1)  # one at a time: return at our answer
                    if not received:
                        break
                    try:
                        kind, answer_id, rest = protocol.parse_server_message(received[0])
                        if kind != RESULT or answer_id != goal_id:
                            continue  # ACCEPTED, or an answer to an abandoned goal
                        transform, exc = protocol.result_outcome(rest)
                    except ProtocolError:
                        continue
                    if exc is not None:
                        raise exc
                    if not answers_the_goal(transform, target_frame, source_frame,
                                            source_time_ns, advanced):
                        self._refuse_answer()
                        continue
                    return transform
                if self._closed:
                    raise TimeoutException(
                        "the BufferClient was closed before the server answered")
                if link.reconnected():
                    remaining = max(0, sent_ns + goal_timeout_ns - time.monotonic_ns())
                    link.send(protocol.pack_goal(
                        goal_id, target_frame, source_frame, source_time_ns, target_time_ns,
                        fixed_frame, advanced, remaining))
        except KeyboardInterrupt:
            # Ctrl-C while waiting: the server forgets the goal now, not at its timeout.
            link.send(protocol.pack_cancel(goal_id))
            raise
        finally:
            with self._channels_lock:
                channel.in_use = False
                if self._closed:
                    self._channels.discard(channel)
                    channel.close()

"""Answers first: the fleet's lookups and goals go ahead of its ingest.

The ingest inserts a round in chunks (``CHUNK_SAMPLES`` samples per kernel call, ingest.py);
while a chunk is stored, the kernel's write lock and the Buffer's lock are held, so any answer
that arrives then waits for that chunk, never for a whole round. Between two chunks the ingest
asks ``AnswerGate.let_answers_pass()``: if an answer started before that point is still being
computed (a lookup, or a goal registering its wait), the ingest waits for it, at most
``MAX_YIELD_S``, before its next chunk. Answers that start later do not hold it: a flood of
lookups slows the ingest by at most one wait per chunk, never stops it.

``AnsweringBuffer`` is what the fleet's ``BufferServer`` answers on: the Buffer's four calls
the server makes (``lookup_transform``, ``lookup_transform_full``, ``wait_for_transform_async``,
``wait_for_transform_full_async``) each inside the gate; everything else is the Buffer's own.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

__all__ = ["AnswerGate", "AnsweringBuffer", "MAX_YIELD_S"]

#: The longest the ingest waits between two chunks for answers in flight (s): a stuck caller
#: can delay the ingest by this much per chunk, never stop it.
MAX_YIELD_S = 0.25


class AnswerGate:
    """Counts the answers in flight; lets the ingest wait, between chunks, for those that
    started before it asked. Thread-safe; ``enter``/``leave`` from any answering thread."""

    def __init__(self, max_yield_s: float = MAX_YIELD_S) -> None:
        self.max_yield_s = max_yield_s
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._next = 0  # the ticket the next answer gets
        self._flight: set[int] = set()  # tickets of the answers being computed
        self.answers = 0  # answers that went through the gate
        self.yields = 0  # times the ingest waited for answers
        self.yield_timeouts = 0  # waits that ran out (an answer slower than max_yield_s)
        self.yield_ns = 0  # the ingest's time spent waiting, in total

    def enter(self) -> int:
        """An answer starts: its ticket (hand it to ``leave``)."""
        with self._lock:
            ticket = self._next
            self._next += 1
            self._flight.add(ticket)
            return ticket

    def leave(self, ticket: int) -> None:
        """The answer with ``ticket`` is computed (or failed)."""
        with self._lock:
            self._flight.discard(ticket)
            self.answers += 1
            if not self._flight or min(self._flight) > ticket:
                self._done.notify_all()

    @property
    def started(self) -> int:
        """How many answers have started through the gate."""
        return self._next

    def in_flight(self) -> int:
        """How many answers are being computed now."""
        return len(self._flight)

    def let_answers_pass(self) -> None:
        """From the ingest, between chunks: wait until every answer that started before this
        call is computed, at most ``max_yield_s``."""
        if not self._flight:  # (read without the lock: a stale "empty" only skips one wait)
            return
        started = time.monotonic_ns()
        deadline = time.monotonic() + self.max_yield_s
        with self._lock:
            before = self._next  # answers with a smaller ticket go first
            if not any(t < before for t in self._flight):
                return
            self.yields += 1
            while self._flight and min(self._flight) < before:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.yield_timeouts += 1
                    break
                self._done.wait(left)
            self.yield_ns += time.monotonic_ns() - started

    def stats(self) -> dict[str, Any]:
        """Answers through the gate, the ingest's waits for them (count, ran out, ms)."""
        return {"answers": self.answers, "ingest_yields": self.yields,
                "ingest_yield_timeouts": self.yield_timeouts,
                "ingest_yield_ms": self.yield_ns / 1e6}


class AnsweringBuffer:
    """``buffer`` as the fleet's ``BufferServer`` sees it: the four calls the server answers
    with go through ``gate``, so the ingest lets them pass between its chunks."""

    def __init__(self, buffer: Any, gate: AnswerGate) -> None:
        self.buffer = buffer
        self.gate = gate

    def lookup_transform(self, *args: Any, **kwargs: Any) -> Any:
        """``Buffer.lookup_transform``, ahead of the ingest's next chunk."""
        ticket = self.gate.enter()
        try:
            return self.buffer.lookup_transform(*args, **kwargs)
        finally:
            self.gate.leave(ticket)

    def lookup_transform_full(self, *args: Any, **kwargs: Any) -> Any:
        """``Buffer.lookup_transform_full``, ahead of the ingest's next chunk."""
        ticket = self.gate.enter()
        try:
            return self.buffer.lookup_transform_full(*args, **kwargs)
        finally:
            self.gate.leave(ticket)

    def wait_for_transform_async(self, *args: Any, **kwargs: Any) -> Future[Any]:
        """``Buffer.wait_for_transform_async`` (checked, else indexed to wait), ahead of the
        ingest's next chunk."""
        ticket = self.gate.enter()
        try:
            future: Future[Any] = self.buffer.wait_for_transform_async(*args, **kwargs)
            return future
        finally:
            self.gate.leave(ticket)

    def wait_for_transform_full_async(self, *args: Any, **kwargs: Any) -> Future[Any]:
        """``Buffer.wait_for_transform_full_async``, ahead of the ingest's next chunk."""
        ticket = self.gate.enter()
        try:
            future: Future[Any] = self.buffer.wait_for_transform_full_async(*args, **kwargs)
            return future
        finally:
            self.gate.leave(ticket)

    def __getattr__(self, name: str) -> Any:
        # Anything else the server may read (it reads nothing else today): the Buffer's.
        return getattr(self.buffer, name)

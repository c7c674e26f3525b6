"""Lifetimes of bus objects (any bus): joining their threads, and releasing what an object
dropped without ``close()`` still holds, as Python does for unclosed files."""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["join_thread", "release_when_collected", "release_all", "weak_callback",
           "ClosingContext", "CloseOnce"]

_Owner = TypeVar("_Owner", bound="ClosingContext")


class ClosingContext:
    """Makes an object with ``close()`` a context manager: ``with obj:`` closes it at the end,
    as every object that opens sockets or threads promises."""

    if TYPE_CHECKING:  # the class it is mixed into has it (defined here it would shadow one)
        def close(self) -> None: ...

    def __enter__(self: _Owner) -> _Owner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CloseOnce:
    """Whether an object is closed, turned on once under the lock its other methods hold:
    ``begin()`` is True for the first ``close()`` only, so racing closes release once.
    ``closed`` is a plain attribute (read it under the lock)."""

    __slots__ = ("_lock", "closed")

    def __init__(self, lock: AbstractContextManager[Any]) -> None:
        self._lock = lock
        self.closed = False

    def begin(self) -> bool:
        """Mark closed; True if it was open (the caller then releases what it holds)."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
            return True


def join_thread(thread: threading.Thread, timeout: float) -> None:
    """Join ``thread`` for up to ``timeout`` seconds, also one whose ``start()`` was cut short
    (a Ctrl-C or SIGTERM inside ``Thread.start``): such a thread runs but has not yet said it
    started, and a plain ``join`` raises RuntimeError for it."""
    now = time.monotonic()
    deadline = now + timeout
    # A thread that has no ident a second after start() was called never began to run.
    unborn_deadline = min(deadline, now + 1.0)
    while True:
        try:
            thread.join(max(0.0, deadline - time.monotonic()))
            return
        except RuntimeError:
            now = time.monotonic()
            if now >= deadline or (thread.ident is None and now >= unborn_deadline):
                return
            time.sleep(0.001)


def _release_unclosed(release: Callable[[], None], what: str) -> None:
    warnings.warn(f"unclosed {what}: its sockets and threads were released when it was "
                  "collected; call close() or use it as a context manager",
                  ResourceWarning, stacklevel=2)
    release()


def release_when_collected(owner: object, release: Callable[[], None],
                           what: str) -> weakref.finalize:  # type: ignore[type-arg]
    """A finalizer that, when ``owner`` is collected without ``close()``, warns once with
    ``ResourceWarning`` (as an unclosed file does) and calls ``release()``. ``release`` must
    not hold ``owner`` (nor may the owner's threads): use the owner's parts, not the owner.
    ``close()`` calls ``.detach()`` on it first. Not run at interpreter exit."""
    finalizer = weakref.finalize(owner, _release_unclosed, release, what)
    finalizer.atexit = False
    return finalizer


def release_all(*parts: Callable[[], object] | list[Any]) -> Callable[[], None]:
    """What releases an unclosed object's parts, in order: each part is a callable (called),
    or a list of things with ``close()`` (each closed; the list is read when it runs, so
    items added after this call count). The parts must not hold the object itself."""
    def release() -> None:
        for part in parts:
            if isinstance(part, list):
                for item in list(part):
                    item.close()
            else:
                part()

    return release


def weak_callback(method: Callable[..., Any]) -> Callable[..., Any]:
    """A callback that calls the bound ``method`` while its object lives, and does nothing
    once it is gone. A bus that keeps its callbacks in its own registry (Zenoh's callback
    subscribers, a shared DDS participant) would otherwise keep the object alive for ever,
    so an object dropped without ``close()`` could never be collected and released."""
    # The object and the function apart, not a WeakMethod: no bound method is made per call
    # (this runs once per received sample).
    ref = weakref.ref(getattr(method, "__self__"))  # noqa: B009 (any callable's, typed loosely)
    function = getattr(method, "__func__")  # noqa: B009

    def call(*args: Any) -> Any:
        owner = ref()
        return None if owner is None else function(owner, *args)

    return call

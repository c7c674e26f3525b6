"""The kernel boundary: the compiled kernel (``_kernel/``, C++; ``_kernel_ext``) as the rest of
tf2py calls it.

A store (``BufferCore``, ``Buffer``) holds one ``Kernel`` as its member ``kernel``; the kernel
holds its store weakly (its ``owner``) and calls back into Python only through what
``core.py`` registered with ``configure()``, once, before the first kernel: the message
classes it builds and reads, set_transforms' result type, and the fallbacks of its public
entries. Frame ids are ``str``, times int64 nanoseconds, poses rows
``(tx, ty, tz, qx, qy, qz, qw)``; a failed query raises ``KernelError`` whose ``args`` are an
error record that ``errors.query_error`` words as tf2 does. Every call is atomic (the kernel's
own lock, which readers share); batch calls run without the GIL.

===============================  ==============================================================
``Kernel`` method                what it does (who calls it)
===============================  ==============================================================
``lookup_transform``,            the contract's calls, which are the store's own methods
``can_transform``,               (``kernel_entry``); ``*_waiting`` take a timeout (``Buffer``).
``set_transform``,               What they do not answer goes to the store's fallbacks.
``lookup_transform_waiting``,
``can_transform_waiting``
``set_insert_mode(m)``           what set_transform does with an insert: 0 alone, 1 then the
                                 after-insert fallback, 2 the slow fallback (``Buffer``)
``insert``                       one sample from values: a code (> 0 stored, 0 too old, < 0
                                 refused) (``set_transform_values``)
``insert_rows``,                 set_transforms' forms: N rows, one frame's trajectory, rows
``insert_trajectory``,           with per-row codes (``batch.py``)
``insert_batch``
``insert_cdr``                   TFMessage CDR samples decoded and stored, a round per call
                                 (``batch.insert_cdr``: ROS 2, Zenoh, the fleet)
``lookup``, ``lookup_full``      a pose row and the stamp used, for checked arguments
``can``                          whether ``lookup`` would succeed
``lookup_many``,                 ``lookup_transforms``: (N, 4, 4) over N stamps (ns or s)
``lookup_many_seconds``
``lookup_velocity_plain``,       ``lookup_velocity`` and its batch form (``velocity_arguments``)
``lookup_velocity``,
``lookup_velocities``
``common_time``                  what time zero resolves to for a pair
``chain``, ``get_parent``,       the frame tree (``FrameTree``, the waiting requests' index)
``ancestors``
``exists``,                      frame names, the frame table of tf2's reports, a frame's
``frames``, ``frame_table``,     samples
``samples``
``clear``, ``drop_static``       forget dynamic data / some statics (``tf2py fleet``)
``memory_bytes``                 the kernel's own memory (``Fleet.stats``)
===============================  ==============================================================

Beside the class: ``decode_tf_cdr`` / ``decode_tf_cdr_one`` and ``FrameIds`` (TFMessage CDR,
``cdr.hpp``), ``ForwardKinematics`` (robots, ``forward.hpp``), ``TimeCache`` (one frame's
cache, ``time_cache.py``), ``build_transform`` (``make_transform``), ``compose``,
``inverse``, ``matrix``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import _kernel_ext
from ._kernel_ext import Kernel, KernelError
from .batch import BatchResult
from .errors import add_hints
from .exceptions import InvalidArgumentException, TransformException
from .messages import Header, Quaternion, Transform, TransformStamped, Twist, Vector3, VelocityStamped
from .time import Duration, Time

if TYPE_CHECKING:
    from .core import BufferCore

__all__ = ["Kernel", "KernelError", "configure_kernel", "kernel_entry"]


_F = TypeVar("_F", bound=Callable[..., Any])


def kernel_entry(entry: str) -> Callable[[_F], _F]:
    """A store method's decorator: the method becomes the kernel's entry ``entry``
    (``lookup_transform``, ``lookup_transform_waiting``, ``can_transform``,
    ``can_transform_waiting`` or ``set_transform``) as a method descriptor of the class (a
    ``StoreMethod``, ``_kernel/py_method.hpp``), which runs on the store's kernel with no
    Python frame: a call that succeeds runs no Python at all (the decorated body, the same
    call through a Python frame, costs a depth-3 lookup about 10 % more instructions). It
    keeps the method's signature, docstring and names, so ``inspect`` and ``help`` show them;
    a subclass may override the method as any other."""

    def decorate(method: _F) -> _F:
        fast: Any = _kernel_ext.store_method(entry)
        fast.__signature__ = inspect.signature(method)
        fast.__doc__ = method.__doc__
        fast.__name__ = method.__name__
        fast.__qualname__ = method.__qualname__
        fast.__module__ = method.__module__
        fast.__wrapped__ = method
        return cast(_F, fast)

    return decorate


# -- what the kernel calls: the fallbacks of its public entries, with the store that owns it --

def _lookup_fallback(
    store: BufferCore, target_frame: Any, source_frame: Any, time: Any, timeout: Any, result: object,
) -> TransformStamped:
    """Called by the kernel's lookup_transform for what it does not answer itself: an error
    to word, arguments to convert, a wait (``Buffer``)."""
    hints = store._lookup_hints
    if not hints:
        return store._lookup_transform_fallback(target_frame, source_frame, time, timeout, result)
    try:
        return store._lookup_transform_fallback(target_frame, source_frame, time, timeout, result)
    except InvalidArgumentException:
        raise  # no data can cure it: nothing to hint
    except TransformException as exc:
        add_hints(exc, hints)
        raise


def _can_fallback(store: BufferCore, target_frame: Any, source_frame: Any, time: Any, timeout: Any) -> bool:
    """Called by the kernel's can_transform for arguments to convert or a wait (``Buffer``)."""
    return store._can_transform_fallback(target_frame, source_frame, time, timeout)



def _insert_slow(store: BufferCore, transform: Any, authority: Any, is_static: Any) -> bool:
    """Called by the kernel's set_transform for what it does not store itself (a message to
    read, a refusal to word) and for a ``Buffer`` that must see the insert first."""
    return store._set_transform_slow(transform, authority, is_static)


def _insert_after(store: BufferCore, transform: Any, stored: bool) -> None:
    """Called by the kernel's set_transform after its insert when the insert mode asks."""
    store._after_direct_insert(transform, stored)



def _store_class() -> type:
    """``BufferCore``, whose ``_kernel`` slot the entries read (imported here: core imports
    this module)."""
    from .core import BufferCore

    return BufferCore


def _kernel_configuration() -> dict[str, Any]:
    """The arguments of the kernel's configuration: the classes it builds and reads,
    set_transforms' result type, and the fallbacks above."""
    return dict(
        time=Time, duration=Duration, header=Header, vector3=Vector3, quaternion=Quaternion,
        transform=Transform, stamped=TransformStamped, velocity_stamped=VelocityStamped,
        twist=Twist, batch_result=BatchResult, lookup_fallback=_lookup_fallback,
        can_fallback=_can_fallback, insert_slow=_insert_slow, insert_after=_insert_after,
        store=_store_class(),
    )


@functools.cache
def configure_kernel() -> None:
    """The kernel's one configuration call, made by the first store before its kernel."""
    _kernel_ext.configure(**_kernel_configuration())

"""Filling a buffer from received transforms: what every bus's ``TransformListener`` does with a
message, once it has decoded it. ``BufferFiller`` inserts one message with one call and counts;
``SubscriberListener`` is a listener built on any bus's ``transform_subscriber``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..buffer.exceptions import InvalidArgumentException
from ..buffer.transforms import Transforms
from .counters import DropCounter
from .frame_ids import SlashCounter
from .lifetime import ClosingContext

if TYPE_CHECKING:
    from .interface import TransformReceiver, Transport
    from .listener import TransformBatch

__all__ = ["BufferFiller", "FillingListener", "SubscriberListener", "check_buffer"]


def check_buffer(buffer: Any) -> None:
    """TypeError unless ``buffer`` can take transforms (a Buffer, a BufferCore or alike)."""
    if not hasattr(buffer, "set_transforms") and not hasattr(buffer, "set_transform"):
        raise TypeError(
            f"TransformListener fills a Buffer (or a BufferCore), got {type(buffer).__name__}")


class BufferFiller:
    """Inserts decoded messages into ``buffer``, one insertion call per message, with the
    sender's authority; counts stored and old transforms, and drops invalid ones into
    ``dropped`` (cause ``"invalid"``), and those of an insert that raised anything else (cause
    ``"error"``: a buffer's own fault never ends a listener). Frame ids with a leading ``/``
    are stored without it (the buffer's rule, tf2's) and counted per sender in ``slashes``."""

    def __init__(self, buffer: Any, dropped: DropCounter):
        check_buffer(buffer)
        self.buffer = buffer
        self.dropped = dropped
        self.slashes = SlashCounter(getattr(dropped, "_owner", "tf2py listener"))
        self.stored_transforms = 0
        self.old_transforms = 0
        self._set_transforms = getattr(buffer, "set_transforms", None)
        self._set_transform_values = getattr(buffer, "set_transform_values", None)

    def insert_one(self, parent: str, child: str, stamp_ns: int, values: Sequence[float],
                   authority: str, is_static: bool) -> None:
        """Insert one transform (the single insert skips the batch's array set-up)."""
        if parent[:1] == "/" or child[:1] == "/":
            self.slashes.count(authority, (parent,), (child,))
        if self._set_transform_values is None:
            self.insert(authority, Transforms._of([parent], [child],
                                                  np.array([stamp_ns], dtype=np.int64),
                                                  np.array([values], dtype=np.float64)),
                        is_static)
            return
        try:
            stored = self._set_transform_values(parent, child, stamp_ns, *values, authority,
                                                is_static)
        except InvalidArgumentException as exc:
            self.dropped.drop("invalid", f"transform 0 of a message from {authority}: {exc}")
            return
        except Exception as exc:  # the buffer's own fault: a listener never dies of it
            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
            return
        if stored:
            self.stored_transforms += 1
        else:
            self.old_transforms += 1

    def insert(self, authority: str, transforms: Transforms, is_static: bool) -> None:
        """Insert the N transforms of one message."""
        parents, children = transforms.parents, transforms.children
        self.slashes.count(authority, parents, children)
        if self._set_transforms is None:
            self._insert_one_by_one(authority, transforms, is_static)
            return
        try:
            result = self._set_transforms(parents, children, transforms.stamps_ns,
                                          transforms.values, authority, is_static)
        except Exception as exc:  # the buffer's own fault: a listener never dies of it
            self.dropped.drop("error", f"{type(exc).__name__}: {exc}", n=len(children))
            return
        self.stored_transforms += result.stored
        self.old_transforms += result.old
        if result.invalid:
            index, refusal = result.invalid[0]
            self.dropped.drop("invalid", f"transform {index} of a message from {authority}: "
                              f"{refusal}", n=len(result.invalid))

    def _insert_one_by_one(self, authority: str, transforms: Transforms,
                           is_static: bool) -> None:
        # For buffers without the batch call (duck-typed BufferCore-likes).
        for index, ts in enumerate(transforms):
            try:
                if self.buffer.set_transform(ts, authority, is_static):
                    self.stored_transforms += 1
                else:
                    self.old_transforms += 1
            except Exception as exc:
                self.dropped.drop("invalid", f"transform {index}: {exc}")


class FillingListener:
    """What every bus's ``TransformListener`` shares: its ``BufferFiller``'s counts, as
    attributes and in ``stats()`` (``_filled(stats)`` adds them to a receiver's stats)."""

    _filler: BufferFiller

    @property
    def stored_transforms(self) -> int:
        return self._filler.stored_transforms

    @property
    def old_transforms(self) -> int:
        return self._filler.old_transforms

    def _filled(self, stats: dict[str, Any]) -> dict[str, Any]:
        stats["stored_transforms"] = self._filler.stored_transforms
        stats["old_transforms"] = self._filler.old_transforms
        stats["leading_slash"] = self._filler.slashes.snapshot()
        return stats


class SubscriberListener(FillingListener, ClosingContext):
    """A ``TransformListener`` built on a bus's ``transform_subscriber``: each batch goes into
    ``buffer`` with one call. What a bus without its own listener gets."""

    def __init__(self, transport: Transport, buffer: Any, address: str, keys: Any = None):
        self.buffer = buffer
        self.dropped = DropCounter("tf2py-transform-listener")
        self._filler = BufferFiller(buffer, self.dropped)
        self._subscriber: TransformReceiver = transport.transform_subscriber(
            address, self._on_batch, keys)

    def _on_batch(self, batch: TransformBatch) -> None:
        rows = batch.transforms
        if len(rows) == 1:
            self._filler.insert_one(rows.parents[0], rows.children[0], int(rows.stamps_ns[0]),
                                    tuple(rows.values[0].tolist()), batch.authority,
                                    batch.is_static)
        else:
            self._filler.insert(batch.authority, rows, batch.is_static)

    def stats(self) -> dict[str, Any]:
        stats = self._subscriber.stats()
        dropped = dict(stats.get("dropped", {}))
        for cause, n in self.dropped.snapshot().items():
            dropped[cause] = dropped.get(cause, 0) + n
        stats["dropped"] = dropped
        return self._filled(stats)

    def close(self) -> None:
        self._subscriber.close()

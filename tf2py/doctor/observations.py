"""What the doctor keeps while it listens: per child frame, per publisher (authority), the
few numbers each check needs. Fed one message at a time; pure (no sockets, no threads, no
clock of its own: every time is given)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Observations", "ChildRecord", "AuthorityRecord", "TF", "TF_STATIC"]

TF = "/tf"
TF_STATIC = "/tf_static"

#: tf2py refuses (and tf2 warns about) a quaternion whose squared norm is this far from 1.
QUATERNION_TOLERANCE = 0.01
#: Stamps kept per dynamic child frame for the rate checks (the latest ones); enough for a
#: minute at 100 Hz, and memory stays bounded however long the doctor listens.
MAX_STAMPS = 6000
#: Offsets (stamp minus receive time) kept per publisher for the clock checks.
MAX_OFFSETS = 2000


@dataclass
class ChildRecord:
    """Everything seen of one child frame (leading '/' stripped, as tf2 does)."""

    parents: dict[str, int] = field(default_factory=dict)  # parent -> transforms, first seen first
    latest_parent: str = ""
    #: authority -> [first receive ns, last receive ns, transforms] on /tf
    dynamic_authorities: dict[str, list[int]] = field(default_factory=dict)
    static_authorities: dict[str, int] = field(default_factory=dict)
    dynamic_count: int = 0
    static_count: int = 0
    static_received_ns: list[int] = field(default_factory=list)
    static_values: set[tuple[float, ...]] = field(default_factory=set)
    first_dynamic_values: tuple[float, ...] | None = None
    dynamic_values_change: bool = False
    stamps_ns: list[int] = field(default_factory=list)  # dynamic, in arrival order (bounded)
    first_received_ns: int = 0
    last_received_ns: int = 0


@dataclass
class AuthorityRecord:
    """One publisher: per child frame it sends on /tf, the offsets of the stamps from the
    receiver's clock (stamp minus receive time, ns; the latest, bounded)."""

    offsets_ns: dict[str, list[int]] = field(default_factory=dict)
    transforms: int = 0


@dataclass
class Dropped:
    """Transforms tf2 would refuse, counted per (check, child, authority)."""

    count: int = 0
    example: str = ""


class Observations:
    """The doctor's memory of a bus: feed it with ``add`` (one message at a time, in the
    order received), then hand it to ``tf2py.doctor.checks.diagnose``."""

    def __init__(self) -> None:
        self.children: dict[str, ChildRecord] = {}
        self.authorities: dict[str, AuthorityRecord] = {}
        self.dropped: dict[tuple[str, str, str], Dropped] = {}
        self.leading_slash: dict[str, set[str]] = {}  # frame as sent -> authorities
        self.messages = 0
        self.transforms = 0
        self.first_received_ns: int | None = None
        self.last_received_ns: int | None = None

    def add(
        self,
        received_ns: int,
        topic: str,
        authority: str,
        parents: Sequence[str],
        children: Sequence[str],
        stamps_ns: Sequence[int],
        values: Sequence[Sequence[float]],
    ) -> None:
        """One message: received at ``received_ns`` (the receiver's clock, ns) on ``topic``
        (``"/tf"`` or ``"/tf_static"``) from ``authority``; row i maps data in
        ``children[i]`` into ``parents[i]`` at ``stamps_ns[i]`` with ``values[i]`` =
        (tx, ty, tz, qx, qy, qz, qw)."""
        if topic not in (TF, TF_STATIC):
            raise ValueError(f"topic must be {TF!r} or {TF_STATIC!r}, got {topic!r}")
        is_static = topic == TF_STATIC
        received_ns = int(received_ns)
        self.messages += 1
        if self.first_received_ns is None:
            self.first_received_ns = received_ns
        self.last_received_ns = received_ns
        for parent, child, stamp, row in zip(parents, children, stamps_ns, values):
            self.transforms += 1
            self._add_one(received_ns, is_static, authority, str(parent), str(child),
                          int(stamp), tuple(float(v) for v in row))

    def _add_one(self, received_ns: int, is_static: bool, authority: str, parent: str,
                 child: str, stamp_ns: int, values: tuple[float, ...]) -> None:
        for frame in (parent, child):
            if frame.startswith("/"):
                self.leading_slash.setdefault(frame, set()).add(authority)
        parent, child = parent.lstrip("/"), child.lstrip("/")
        if not parent or not child or parent == child or not all(map(math.isfinite, values)):
            self._drop("invalid_value", child, authority,
                       "empty frame id" if not parent or not child else
                       "child equals parent" if parent == child else "NaN or infinity")
            return
        norm2 = values[3] ** 2 + values[4] ** 2 + values[5] ** 2 + values[6] ** 2
        if abs(norm2 - 1.0) >= QUATERNION_TOLERANCE:
            self._drop("invalid_quaternion", child, authority, f"{math.sqrt(norm2):.4g}")
            return
        record = self.children.get(child)
        if record is None:
            record = self.children[child] = ChildRecord(first_received_ns=received_ns)
        record.parents[parent] = record.parents.get(parent, 0) + 1
        record.latest_parent = parent
        record.last_received_ns = received_ns
        if is_static:
            record.static_count += 1
            record.static_authorities[authority] = record.static_authorities.get(authority, 0) + 1
            record.static_values.add(values)
            if len(record.static_received_ns) < MAX_STAMPS:
                record.static_received_ns.append(received_ns)
            return
        record.dynamic_count += 1
        span = record.dynamic_authorities.get(authority)
        if span is None:
            record.dynamic_authorities[authority] = [received_ns, received_ns, 1]
        else:
            span[1] = received_ns
            span[2] += 1
        if record.first_dynamic_values is None:
            record.first_dynamic_values = values
        elif not record.dynamic_values_change and values != record.first_dynamic_values:
            record.dynamic_values_change = True
        record.stamps_ns.append(stamp_ns)
        if len(record.stamps_ns) > 2 * MAX_STAMPS:
            del record.stamps_ns[:MAX_STAMPS]  # amortised: keep the latest
        publisher = self.authorities.get(authority)
        if publisher is None:
            publisher = self.authorities[authority] = AuthorityRecord()
        publisher.transforms += 1
        offsets = publisher.offsets_ns.get(child)
        if offsets is None:
            offsets = publisher.offsets_ns[child] = []
        offsets.append(stamp_ns - received_ns)
        if len(offsets) > 2 * MAX_OFFSETS:
            del offsets[:MAX_OFFSETS]

    def _drop(self, check: str, child: str, authority: str, example: str) -> None:
        key = (check, child, authority)
        entry = self.dropped.get(key)
        if entry is None:
            entry = self.dropped[key] = Dropped(example=example)
        entry.count += 1

    @property
    def duration_ns(self) -> int:
        """Receive time from the first message to the last (ns)."""
        if self.first_received_ns is None or self.last_received_ns is None:
            return 0
        return self.last_received_ns - self.first_received_ns

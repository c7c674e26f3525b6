"""``--world FILE``: the statics that relate robots to each other.

The file is a YAML list of ``{parent, child, translation: [x, y, z], rotation: [x, y, z, w]}``
(translation in metres, rotation a quaternion), e.g.::

    - {parent: world, child: robot7/map, translation: [10, 0, 0], rotation: [0, 0, 0, 1]}

Frame ids are used as written (they already carry the namespace). ``translation`` and
``rotation`` may be left out (zero, identity). Every error is a ``WorldError`` of one line
naming the file, the entry and what is wrong.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...buffer.transforms import Transforms
from ...transport.yaml_files import YamlFileError, load_yaml, read_text_file

__all__ = ["WorldError", "WorldStatic", "load_world", "parse_world", "world_transforms",
           "MAX_WORLD_BYTES"]

#: The largest world file read (a static is about 100 bytes: 100 000 of them fit).
MAX_WORLD_BYTES = 16 * 1024 * 1024

_KEYS = {"parent", "child", "translation", "rotation"}


class WorldError(ValueError):
    """A world file that cannot be used: one line saying where and why."""


class WorldStatic:
    """One static of the world file: ``values`` is ``(tx, ty, tz, qx, qy, qz, qw)``."""

    __slots__ = ("parent", "child", "values")

    def __init__(self, parent: str, child: str, values: tuple[float, ...]):
        self.parent = parent
        self.child = child
        self.values = values

    def __repr__(self) -> str:
        return f"WorldStatic({self.parent!r} -> {self.child!r}, {self.values})"


def _numbers(where: str, name: str, value: Any, count: int) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise WorldError(f"{where}: {name} must be a list of {count} numbers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise WorldError(f"{where}: {name} must be a list of {count} finite numbers, "
                             f"got {value!r}")
        out.append(float(v))
    return out


def _frame(where: str, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip("/"):
        raise WorldError(f"{where}: {name} must be a non-empty frame id, got {value!r}")
    return value[1:] if value.startswith("/") else value


def parse_world(document: Any, source: str = "world file") -> list[WorldStatic]:
    """The statics of a loaded YAML document (see the module doc); WorldError otherwise."""
    if document is None:
        return []
    if not isinstance(document, list):
        raise WorldError(f"{source}: expected a YAML list of "
                         "{parent, child, translation, rotation} entries")
    statics: list[WorldStatic] = []
    children: dict[str, int] = {}
    for index, entry in enumerate(document):
        where = f"{source}: entry {index + 1}"
        if not isinstance(entry, dict):
            raise WorldError(f"{where}: expected a mapping with parent and child, got {entry!r}")
        unknown = sorted(str(k) for k in entry if k not in _KEYS)
        if unknown:
            raise WorldError(f"{where}: unknown key {unknown[0]!r} (expected parent, child, "
                             "translation, rotation)")
        for key in ("parent", "child"):
            if key not in entry:
                raise WorldError(f"{where}: missing {key}")
        parent = _frame(where, "parent", entry["parent"])
        child = _frame(where, "child", entry["child"])
        if parent == child:
            raise WorldError(f"{where}: parent and child are both {child!r}")
        if child in children:
            raise WorldError(f"{where}: child {child!r} already has a parent in entry "
                             f"{children[child]}")
        children[child] = index + 1
        translation = _numbers(where, "translation", entry.get("translation", [0, 0, 0]), 3)
        rotation = _numbers(where, "rotation", entry.get("rotation", [0, 0, 0, 1]), 4)
        norm = math.sqrt(sum(q * q for q in rotation))
        if abs(norm * norm - 1.0) >= 0.01:
            raise WorldError(f"{where}: rotation {rotation} is not a unit quaternion "
                             f"(norm {norm:g})")
        rotation = [q / norm for q in rotation]
        statics.append(WorldStatic(parent, child, tuple(translation + rotation)))
    _refuse_cycles(statics, children, source)
    return statics


def _refuse_cycles(statics: list[WorldStatic], entries: dict[str, int], source: str) -> None:
    """WorldError naming the frames of the first cycle (a frame its own ancestor)."""
    parent_of = {s.child: s.parent for s in statics}
    done: set[str] = set()
    for start in parent_of:
        path: list[str] = []
        on_path: set[str] = set()
        frame: str | None = start
        while frame is not None and frame not in done:
            if frame in on_path:
                loop = path[path.index(frame):] + [frame]
                raise WorldError(f"{source}: entry {entries[frame]}: a cycle: "
                                 f"{' -> '.join(reversed(loop))} (a frame cannot be its own "
                                 "ancestor)")
            path.append(frame)
            on_path.add(frame)
            frame = parent_of.get(frame)
        done.update(path)


def load_world(path: str) -> list[WorldStatic]:
    """The statics of the YAML file at ``path``; WorldError (one line) if it cannot be read:
    not a regular file, over ``MAX_WORLD_BYTES``, nested too deep, too many aliases
    (``tf2py.transport.yaml_files``), invalid YAML or statics."""
    where = f"world file {path!r}"
    try:
        document = load_yaml(read_text_file(path, "world file", MAX_WORLD_BYTES), where)
    except YamlFileError as exc:
        raise WorldError(str(exc)) from None
    return parse_world(document, where)


def world_transforms(statics: list[WorldStatic]) -> Transforms:
    """The statics as one ``Transforms`` stamped 0 (statics hold at every time): what
    ``Buffer.set_transforms`` takes."""
    values = np.array([s.values for s in statics], dtype=np.float64).reshape(len(statics), 7)
    return Transforms([s.parent for s in statics], [s.child for s in statics], 0, values)

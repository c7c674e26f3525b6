"""``RobotModel``: a robot's links and joints from URDF (or xacro), its joint transforms and
its forward kinematics, with no bus.

The meaning is urdfdom's and robot_state_publisher's: a joint maps its child link into its
parent link by its origin (xyz, then rpy with R = Rz·Ry·Rx) followed by its motion; fixed
joints are static transforms, revolute, continuous and prismatic joints move with the joint
states (mimics follow their masters, unless a joint state gives a mimic's own position, which
robot_state_publisher then uses), floating and planar joints are left to localisation.
"""

from __future__ import annotations

import codecs
import math
import os
import re
from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from ..buffer import core as _core  # noqa: F401  (registers the messages the kernel builds)
from ..buffer._kernel_ext import build_transform as _build_transform
from ..buffer.messages import TransformStamped, stamped
from ..buffer.time import Time, to_nanoseconds
from ..buffer.transforms import Transforms
from .errors import RobotModelError
from .joint import Joint, JointLimits, JointMimic, Joints
from .kinematics import Kinematics
from .urdf import Description, describe
from .xacro_files import expand_xacro
from .xml_tree import parse_xml

__all__ = ["RobotModel", "Joint", "JointLimits", "JointMimic"]

Positions = Mapping[str, float] | Sequence[float] | npt.ArrayLike


class RobotModel:
    """A robot description: ``.name``, ``.root``, ``.links`` (parents before children),
    ``.joints`` (document order), ``.joint_names`` (the joints joint states drive) and
    ``.urdf`` (the URDF text, as sent on ``/robot_description``).

    Build one with ``from_urdf(path)`` or ``from_urdf_string(xml)``. Positions are radians
    for revolute and continuous joints and metres for prismatic ones, given as a mapping of
    joint names to positions or a sequence in ``joint_names`` order.
    """

    def __init__(self, description: Description, urdf: str) -> None:
        """A model of a checked ``Description`` and its URDF text: build one with
        ``RobotModel.from_urdf(path)`` or ``RobotModel.from_urdf_string(xml)``."""
        self.name: str = description.name
        self.root: str = description.root
        self.links: list[str] = list(description.links)
        self.joints: Joints = Joints(list(description.joints))
        self.joint_names: list[str] = list(description.joint_names)
        self.urdf: str = urdf
        self._kinematics = Kinematics(description)
        #: The joints /tf carries: the driven joints and the mimics following them, in
        #: document order (the columns of ``joint_state_rows``).
        self.movable_joint_names: list[str] = list(self._kinematics.moving_names)
        self._driven_index = {name: k for k, name in enumerate(self.joint_names)}
        self._names: dict[str, tuple[list[str], list[str]]] = {}

    # -- building --------------------------------------------------------------------------

    @classmethod
    def from_urdf(cls, path: str | os.PathLike[str],
                  xacro_args: Mapping[str, object] | None = None) -> RobotModel:
        """The model in a URDF file, or in a xacro file (a name ending in ``.xacro``,
        expanded by the ``xacro`` package with ``xacro_args`` as ``name:=value``)."""
        source = os.fspath(path)
        if source.endswith(".xacro"):
            text = expand_xacro(source, xacro_args or {})
            return cls._from_text(text, f"{source} (expanded by xacro)", text)
        if xacro_args:
            raise RobotModelError(source, None, "file",
                                  "xacro_args given for a file that is not .xacro")
        try:
            with open(source, "rb") as stream:
                data = stream.read()
        except OSError as exc:
            raise RobotModelError(source, None, "file",
                                  f"cannot be read: {exc.strerror or exc}") from None
        return cls._from_text(data, source, _xml_text(data))

    @classmethod
    def from_urdf_string(cls, xml: str | bytes) -> RobotModel:
        """The model in URDF text (errors name the source ``<string>``)."""
        if not isinstance(xml, (str, bytes)):
            raise TypeError(f"from_urdf_string needs URDF text, got {type(xml).__name__}")
        text = xml if isinstance(xml, str) else _xml_text(xml)
        return cls._from_text(xml, "<string>", text)

    @classmethod
    def _from_text(cls, data: str | bytes, source: str, text: str) -> RobotModel:
        return cls(describe(parse_xml(data, source), source), text)

    def __repr__(self) -> str:
        return (f"RobotModel({self.name!r}, root={self.root!r}, {len(self.links)} links, "
                f"{len(self.joint_names)} driven joints)")

    # -- positions -------------------------------------------------------------------------

    def positions_array(self, positions: Positions) -> npt.NDArray[np.float64]:
        """``(dof,)`` positions in ``joint_names`` order; for a mapping, NaN where a joint
        is not given (names not in the model are ignored)."""
        if isinstance(positions, Mapping):
            return _read_mapping(positions, self._driven_index)
        array = self._configurations(positions)
        if array.ndim != 1:
            raise ValueError(f"one configuration needs {len(self.joint_names)} positions "
                             f"(joint_names order), got shape {array.shape}")
        return array

    def _configurations(self, positions: Any) -> npt.NDArray[np.float64]:
        """``(dof,)`` or ``(N, dof)`` finite float positions, checked."""
        try:
            array = np.asarray(positions, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("positions must be a mapping of joint names to numbers or a "
                             f"sequence of {len(self.joint_names)} numbers") from None
        dof = len(self.joint_names)
        if array.ndim not in (1, 2) or array.shape[-1] != dof:
            raise ValueError(f"positions need {dof} values per configuration (joint_names "
                             f"order), got shape {array.shape}")
        if not np.isfinite(array).all():
            bad = np.argwhere(~np.isfinite(array))[0]
            raise ValueError(f"joint {self.joint_names[int(bad[-1])]!r}: position "
                             f"{array[tuple(bad)]} is not finite")
        return array

    def movable_positions(self, positions: Positions) -> dict[str, float]:
        """Every movable joint's position for one configuration, in document order: the
        driven joints given and the mimics following them (``multiplier × master +
        offset``), as joint_state_publisher lists them on ``/joint_states``."""
        theta = self._theta(positions)
        return {name: value for name, value in zip(self.movable_joint_names, theta.tolist())
                if value == value}  # NaN: not given (nor its master)

    def _theta(self, positions: Positions) -> npt.NDArray[np.float64]:
        """The movable joints' positions ``(M,)`` for one configuration (NaN: not given):
        a mapping may give mimics their own positions (robot_state_publisher's rule); a
        sequence gives the driven joints, the mimics following them."""
        k = self._kinematics
        if isinstance(positions, Mapping):
            return k.theta_of(_read_mapping(positions, k.moving_index))
        return k.moving_positions(self.positions_array(positions))

    # -- transforms ------------------------------------------------------------------------

    def static_rows(self, frame_prefix: str = "", stamp_ns: int = 0) -> Transforms:
        """The fixed joints' transforms (parent link -> child link, metres) stamped
        ``stamp_ns`` (int nanoseconds), as one ``Transforms``."""
        k = self._kinematics
        return Transforms([frame_prefix + p for p in k.static_parents],
                          [frame_prefix + c for c in k.static_children], stamp_ns,
                          k.static_values.copy())

    def static_transforms(self, stamp: Time | float = 0,
                          frame_prefix: str = "") -> list[TransformStamped]:
        """The fixed joints' ``TransformStamped``s (parent link -> child link) at ``stamp``
        (a ``Time`` or seconds); ``frame_prefix`` is put before every link name."""
        return self.static_rows(frame_prefix, to_nanoseconds(stamp, "stamp")).to_messages()

    def movable_rows(self, positions: Positions, stamps_ns: Any = 0,
                     frame_prefix: str = "") -> Transforms:
        """The moving joints' transforms for one or N configurations, as one ``Transforms``.

        ``positions``: a mapping, or ``(dof,)`` or ``(N, dof)`` in ``joint_names`` order,
        where NaN means "not given": that joint and the mimics following it give no row.
        ``stamps_ns``: one int (nanoseconds) or N of them. Rows come joint by joint, each
        joint's rows in configuration order (rising stamps: the kernel stores each as a run).
        Driven joints and the mimics following them, in document order; undriven joints
        (floating, planar, mimics of joints the model lacks) give none.
        """
        k = self._kinematics
        if isinstance(positions, Mapping):
            theta = self._theta(positions)[None, :]
        else:
            theta = k.moving_positions(_rows(positions, self.joint_names, "positions",
                                             "configuration", "joint_names"))
        return self._rows_of(theta, stamps_ns, frame_prefix)

    def joint_state_rows(self, given: Any, stamps_ns: Any = 0,
                         frame_prefix: str = "") -> Transforms:
        """``movable_rows`` for joint states read onto ``movable_joint_names``: ``given``
        ``(M,)`` or ``(N, M)``, NaN where a message names no position; a mimic given keeps
        its own position, one not given follows its master (robot_state_publisher's rule)."""
        array = _rows(given, self.movable_joint_names, "joint states", "message",
                      "movable_joint_names")
        return self._rows_of(self._kinematics.theta_of(array), stamps_ns, frame_prefix)

    def _rows_of(self, theta: npt.NDArray[np.float64], stamps_ns: Any,
                 frame_prefix: str) -> Transforms:
        """The rows of the movable joints' positions ``theta (N, M)`` (NaN: no row)."""
        k = self._kinematics
        n = theta.shape[0]
        stamps = np.asarray(stamps_ns, dtype=np.int64)
        if stamps.ndim == 0:
            stamps = np.full(n, int(stamps), dtype=np.int64)
        elif stamps.shape != (n,):
            raise ValueError(f"{n} configurations need {n} stamps, got shape {stamps.shape}")
        names_p, names_c = self._moving_names(frame_prefix)
        if n == 1:  # a joint state: the publishers' path
            theta = theta[0]
            values = k.rows_single(theta)
            parents, children = list(names_p), list(names_c)
            all_stamps = np.full(len(theta), stamps[0], dtype=np.int64)
        else:
            values = k.rows(theta).reshape(-1, 7)
            theta = theta.T
            parents = list(chain.from_iterable(repeat(p, n) for p in names_p))
            children = list(chain.from_iterable(repeat(c, n) for c in names_c))
            all_stamps = np.tile(stamps, len(theta))
        given = ~np.isnan(theta.reshape(-1))
        if not given.all():
            keep = np.flatnonzero(given)
            parents = [parents[i] for i in keep.tolist()]
            children = [children[i] for i in keep.tolist()]
            values = values[keep]
            all_stamps = all_stamps[keep]
        return Transforms._of(parents, children, all_stamps, np.ascontiguousarray(values))

    def _moving_names(self, frame_prefix: str) -> tuple[list[str], list[str]]:
        """The moving joints' parent and child links with ``frame_prefix``, kept per prefix
        (a publisher asks for the same ones at every joint state)."""
        names = self._names.get(frame_prefix)
        if names is None:
            k = self._kinematics
            names = ([frame_prefix + p for p in k.moving_parents],
                     [frame_prefix + c for c in k.moving_children])
            if len(self._names) < 64:
                self._names[frame_prefix] = names
        return names

    def transforms(self, positions: Positions, stamp: Time | float = 0,
                   frame_prefix: str = "") -> list[TransformStamped]:
        """The moving joints' ``TransformStamped``s (parent link -> child link) for one
        configuration: those given and the mimics following them (a sequence gives all).
        ``stamp`` is a ``Time`` or seconds."""
        k = self._kinematics
        theta = self._theta(positions)
        values = k.rows_single(theta)
        time = stamp if type(stamp) is Time else Time.from_nanoseconds(to_nanoseconds(stamp, "stamp"))
        parents, children = self._moving_names(frame_prefix)
        out = []
        for parent, child, translation, rotation, angle in zip(
                parents, children, values[:, :3].tolist(), values[:, 3:].tolist(), theta.tolist()):
            if angle == angle:  # NaN: a joint not given (nor its master)
                message = _build_transform(parent, child, translation, rotation, time)
                out.append(message if message is not None else stamped(
                    parent, child, translation + rotation + [time.nanoseconds], time))
        return out

    # -- forward kinematics ----------------------------------------------------------------

    def forward_kinematics(self, positions: Positions, links: Sequence[str] | None = None,
                           base: str | None = None) -> npt.NDArray[np.float64]:
        """The poses of ``links`` (default ``.links``) in ``base`` (default ``.root``) as 4×4
        matrices (metres): ``(L, 4, 4)`` for one configuration (a mapping naming every
        driven joint, or ``(dof,)``), ``(N, L, 4, 4)`` for ``(N, dof)`` positions. Pose
        ``T`` maps data in the link into ``base``. Floating and planar joints stand at
        their origin."""
        chosen = None if links is None else self._link_indices(links, "links")
        b = -1 if base is None or base == self.root else self._link_indices([base], "base")[0]
        if isinstance(positions, Mapping):
            array = self.positions_array(positions)
            missing = [self.joint_names[i] for i in np.flatnonzero(np.isnan(array)).tolist()]
            if missing:
                raise ValueError(f"forward_kinematics needs every driven joint; missing: "
                                 f"{', '.join(repr(m) for m in missing[:8])}")
            k = self._kinematics
            if any(k.moving_names[joint] in positions for joint, _, _, _ in k.mimic_steps):
                # a mimic given its own position: the walk over every movable joint
                poses: npt.NDArray[np.float64] = k.poses_of_theta(
                    self._theta(positions)[None, :], chosen, b)[0]
                return poses
        else:
            array = self._configurations(positions)
        single = array.ndim == 1
        configurations = array[None, :] if single else array
        out = self._kinematics.poses(configurations, chosen, b)
        return out[0] if single else out

    def _link_indices(self, links: Sequence[str] | None, what: str) -> list[int]:
        index = self._kinematics.link_index
        if links is None:
            return list(range(len(self.links)))
        if isinstance(links, str):
            raise TypeError(f"{what} must be a sequence of link names, not one string")
        unknown = [name for name in links if name not in index]
        if unknown:
            raise ValueError(f"{what}: link {unknown[0]!r} is not in robot {self.name!r}")
        return [index[name] for name in links]

    # -- into a buffer ---------------------------------------------------------------------

    def fill(self, buffer: Any, positions: Positions, stamps: Any,
             authority: str = "robot_state_publisher", frame_prefix: str = "") -> int:
        """Insert the fixed joints (static) and the moving joints' transforms into
        ``buffer`` (a ``Buffer`` or ``BufferCore``), with no bus.

        One configuration (a mapping or ``(dof,)``) with one stamp, or a trajectory,
        ``(N, dof)`` positions with ``(N,)`` stamps, through the kernel's batch insert.
        Stamps are ``Time``s or seconds. Returns the number of transforms stored."""
        if isinstance(positions, Mapping):
            array = self.positions_array(positions)
        else:
            array = self._configurations(positions)
        stamps_ns = _stamps_ns(stamps, 1 if array.ndim == 1 else array.shape[0], array.ndim == 1)
        statics = self.static_rows(frame_prefix, int(stamps_ns.min()) if len(stamps_ns) else 0)
        stored = 0
        if len(statics):
            stored += buffer.set_transforms(statics, authority, True).stored
        rows = self.movable_rows(positions if isinstance(positions, Mapping) else array,
                                 stamps_ns, frame_prefix)
        if len(rows):
            stored += buffer.set_transforms(rows, authority, False).stored
        return int(stored)


def _stamps_ns(stamps: Any, n: int, single: bool) -> npt.NDArray[np.int64]:
    """N int64 nanosecond stamps from a ``Time`` or seconds, or N of them."""
    if single:
        if not isinstance(stamps, (Time, int, float)) and np.ndim(stamps) >= 1:
            if np.size(stamps) != 1:
                raise ValueError(f"one configuration needs one stamp, got {np.size(stamps)} "
                                 "(a trajectory is (N, dof) positions with N stamps)")
            stamps = np.ravel(np.asarray(stamps, dtype=object))[0]
        return np.array([to_nanoseconds(stamps, "stamp")], dtype=np.int64)
    if n == 1 and (isinstance(stamps, (Time, int, float)) or np.ndim(stamps) == 0):
        return np.array([to_nanoseconds(stamps, "stamp")], dtype=np.int64)
    if isinstance(stamps, (Time, int, float)) or np.ndim(stamps) != 1:
        raise ValueError(f"a trajectory of {n} configurations needs {n} stamps, got {stamps!r}")
    if len(stamps) != n:
        raise ValueError(f"a trajectory of {n} configurations needs {n} stamps, got {len(stamps)}")
    array = np.asarray(stamps)
    if array.dtype.kind == "f":
        if not np.isfinite(array).all():
            raise ValueError("stamps must be finite seconds")
        return np.rint(array * 1e9).astype(np.int64)
    if array.dtype.kind in "iu":
        return array.astype(np.int64) * 1_000_000_000
    return np.array([to_nanoseconds(s, "stamp") for s in stamps], dtype=np.int64)


def _rows(values: Any, names: list[str], what: str, per: str,
          order: str) -> npt.NDArray[np.float64]:
    """``values`` as ``(N, len(names))`` floats (one row for ``(len(names),)``); ValueError
    naming ``what``, ``per`` row and the ``order`` of ``names`` otherwise."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != len(names):
        raise ValueError(f"{what} need {len(names)} values per {per} ({order} order), got "
                         f"shape {array.shape}")
    return array


def _read_mapping(positions: Mapping[str, Any], index: Mapping[str, int]) -> npt.NDArray[np.float64]:
    """The positions a mapping gives onto ``index``'s columns, NaN for the others; names
    not in ``index`` are ignored. ValueError for a position that is not a finite number."""
    out = np.full(len(index), np.nan)
    for name, value in positions.items():
        k = index.get(name)
        if k is not None:
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"joint {name!r}: position {value!r} is not a number") from None
            if not math.isfinite(value):
                raise ValueError(f"joint {name!r}: position {value} is not finite")
            out[k] = value
    return out


_DECLARED = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _xml_text(data: bytes) -> str:
    """The text of an XML document's bytes, as its parser reads them: a byte-order mark's
    encoding, else the declaration's (``encoding="ISO-8859-1"``), else UTF-8 (what
    ``/robot_description`` carries is then the document itself, not its bytes misread)."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                       (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    declared = _DECLARED.match(data)
    codec = "utf-8"
    if declared is not None:
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii")).name
        except LookupError:
            pass
    return data.decode(codec, errors="replace")

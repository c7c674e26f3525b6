"""URDF's meaning: links and joints read from the element tree, checked as urdfdom checks.

Where this reader differs from urdfdom, on purpose (tf2py's contract lists the errors):
a revolute or prismatic joint without ``<limit>`` loads (limits None; urdfdom refuses it),
a ``<limit>`` without ``effort`` or ``velocity`` reads them as 0, and a robot without a name
is named "". What urdfdom accepts and KDL would turn into NaN (a zero axis), or leaves
undefined (a link with two parents, where urdfdom keeps the last), is refused here.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import NamedTuple

from ..buffer.messages import Quaternion, Transform, Vector3, quaternion_from_rpy
from .errors import RobotModelError, RobotModelWarning
from .joint import JOINT_TYPES, MOVING_TYPES, Joint, JointLimits, JointMimic, JointSafety
from .xml_tree import Element

__all__ = ["Description", "Drive", "describe"]

# What urdfdom's strToDouble (an istringstream in the classic locale, whole string) takes:
# no inf, nan, hex or digit separators.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


class Drive(NamedTuple):
    """How a moving joint's position follows the joint states: ``multiplier ×
    position of joint_names[source] + offset`` (1 and 0 for a driven joint)."""

    source: int
    multiplier: float
    offset: float


class Description(NamedTuple):
    """A checked robot description: links parent-first, joints in document order, and the
    drive of every moving joint that follows the joint states (mimics resolved)."""

    name: str
    root: str
    links: list[str]
    joints: list[Joint]
    joint_names: list[str]
    drives: dict[str, Drive]


def _number(text: str, source: str, line: int, element: str, what: str) -> float:
    if _NUMBER.match(text.strip()) is None:
        raise RobotModelError(source, line, element, f"{what}: {text!r} is not a finite number")
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise RobotModelError(source, line, element, f"{what}: {text!r} is not a finite number")
    return value


def _vector(text: str, source: str, line: int, element: str, what: str) -> tuple[float, float, float]:
    pieces = text.split()
    if len(pieces) != 3:
        raise RobotModelError(source, line, element,
                              f"{what}: needs 3 numbers, got {len(pieces)} in {text!r}")
    x, y, z = (_number(p, source, line, element, what) for p in pieces)
    return x, y, z


def _origin(xml: Element | None, source: str, element: str) -> Transform:
    """``<origin xyz rpy>``: translation, then rotation R = Rz(yaw)·Ry(pitch)·Rx(roll)."""
    if xml is None:
        return Transform()
    xyz = xml.attributes.get("xyz")
    rpy = xml.attributes.get("rpy")
    t = (0.0, 0.0, 0.0) if xyz is None else _vector(xyz, source, xml.line, element, "<origin xyz>")
    q = (0.0, 0.0, 0.0, 1.0)
    if rpy is not None:
        q = quaternion_from_rpy(*_vector(rpy, source, xml.line, element, "<origin rpy>"))
    return Transform(Vector3(*t), Quaternion(*q))


# The numbers of a link's inertial, visual and collision elements (kept as text, unused by
# kinematics) are checked as urdfdom checks them, so a description that urdfdom refuses for
# a number is refused here too: element -> its numeric attributes and how many numbers each.
_LINK_NUMBERS = {
    "origin": {"xyz": 3, "rpy": 3},
    "mass": {"value": 1},
    "inertia": {"ixx": 1, "ixy": 1, "ixz": 1, "iyy": 1, "iyz": 1, "izz": 1},
    "box": {"size": 3},
    "cylinder": {"radius": 1, "length": 1},
    "sphere": {"radius": 1},
    "mesh": {"scale": 3},
}


def _check_link_numbers(xml: Element, source: str, element: str) -> None:
    """Refuse a number that is not finite anywhere under a ``<link>``."""
    stack = list(xml.children)
    while stack:
        child = stack.pop()
        stack.extend(child.children)
        for attribute, count in _LINK_NUMBERS.get(child.tag, {}).items():
            text = child.attributes.get(attribute)
            if text is None:
                continue
            what = f"<{child.tag} {attribute}>"
            if count == 3:
                _vector(text, source, child.line, element, what)
            else:
                _number(text, source, child.line, element, what)


def _required(xml: Element, attribute: str, source: str, element: str) -> str:
    value = xml.attributes.get(attribute)
    if value is None:
        raise RobotModelError(source, xml.line, element, f"<{xml.tag}> has no {attribute}=")
    return value


def _limits(xml: Element | None, source: str, element: str) -> JointLimits | None:
    if xml is None:
        return None
    values = []
    for key in ("lower", "upper", "velocity", "effort"):
        text = xml.attributes.get(key)
        values.append(0.0 if text is None else _number(text, source, xml.line, element, f"<limit {key}>"))
    return JointLimits(*values)


def _optional_numbers(xml: Element, keys: Sequence[str], source: str,
                      element: str) -> list[float | None]:
    """The numbers of ``xml``'s attributes ``keys`` (None where absent), each checked."""
    return [None if (text := xml.attributes.get(key)) is None else
            _number(text, source, xml.line, element, f"<{xml.tag} {key}>") for key in keys]


def _safety(xml: Element | None, source: str, element: str) -> JointSafety | None:
    if xml is None:
        return None
    return JointSafety(*_optional_numbers(
        xml, ("soft_lower_limit", "soft_upper_limit", "k_position", "k_velocity"), source,
        element))


def _check_joint_numbers(xml: Element, source: str, element: str) -> None:
    """Refuse a number that is not finite in the joint's ``<dynamics>`` and
    ``<calibration>`` (urdfdom refuses the model for them too; kinematics does not use them)."""
    for tag, keys in (("dynamics", ("damping", "friction")),
                      ("calibration", ("rising", "falling"))):
        child = xml.first(tag)
        if child is not None:
            _optional_numbers(child, keys, source, element)


def _mimic(xml: Element | None, source: str, element: str) -> JointMimic | None:
    if xml is None:
        return None
    master = _required(xml, "joint", source, element)
    multiplier = xml.attributes.get("multiplier")
    offset = xml.attributes.get("offset")
    return JointMimic(
        master,
        1.0 if multiplier is None else _number(multiplier, source, xml.line, element, "<mimic multiplier>"),
        0.0 if offset is None else _number(offset, source, xml.line, element, "<mimic offset>"),
    )


def _joint(xml: Element, source: str) -> Joint:
    """One ``<joint>``, read as urdfdom reads it (the first of each child element)."""
    name = _required(xml, "name", source, "joint")
    element = f"joint {name!r}"
    kind = xml.attributes.get("type")
    if kind is None:
        raise RobotModelError(source, xml.line, element, "has no type=")
    if kind not in JOINT_TYPES:
        raise RobotModelError(source, xml.line, element,
                              f"unknown joint type {kind!r} (one of {' '.join(JOINT_TYPES)})")
    origin = _origin(xml.first("origin"), source, element)
    ends = []
    for end in ("parent", "child"):
        end_xml = xml.first(end)
        if end_xml is None or end_xml.attributes.get("link") is None:
            raise RobotModelError(source, xml.line, element, f"has no <{end} link=...>")
        ends.append(end_xml.attributes["link"])
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    if kind not in ("fixed", "floating"):  # urdfdom ignores these joints' axes
        axis_xml = xml.first("axis")
        if axis_xml is not None:
            # urdfdom: an <axis> without xyz leaves the axis zero (refused below).
            text = axis_xml.attributes.get("xyz", "0 0 0")
            axis = _vector(text, source, axis_xml.line, element, "<axis xyz>")
            if axis == (0.0, 0.0, 0.0) and kind in MOVING_TYPES:
                raise RobotModelError(source, axis_xml.line, element,
                                      f"zero axis on a {kind} joint")
    _check_joint_numbers(xml, source, element)
    return Joint(name, kind, ends[0], ends[1], origin, axis,
                 _limits(xml.first("limit"), source, element),
                 _mimic(xml.first("mimic"), source, element),
                 _safety(xml.first("safety_controller"), source, element))


def _check_tree(links: dict[str, int], joints: list[Joint], lines: dict[str, int], robot: Element,
                source: str) -> tuple[str, dict[str, list[Joint]]]:
    """The root link and each link's child joints; refuses missing links, two parents,
    cycles and several (or no) roots."""
    parent_joint: dict[str, Joint] = {}
    children: dict[str, list[Joint]] = {name: [] for name in links}
    for joint in joints:
        element = f"joint {joint.name!r}"
        line = lines[joint.name]
        for end, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise RobotModelError(source, line, element, f"{end} link {link!r} does not exist")
        if joint.parent == joint.child:
            raise RobotModelError(source, line, element,
                                  f"joins link {joint.child!r} to itself (a cycle)")
        first = parent_joint.get(joint.child)
        if first is not None:
            raise RobotModelError(
                source, line, element,
                f"link {joint.child!r} has two parents: joint {first.name!r} (line "
                f"{lines[first.name]}) already makes {first.parent!r} its parent")
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    # Every link has at most one parent: walk up from each link, a revisit on the way up is
    # a cycle; links already walked (and found to reach a root) end a walk early: O(links).
    reaches_root: set[str] = set()
    for start in links:
        path: dict[str, int] = {}
        link = start
        while link in parent_joint and link not in reaches_root:
            if link in path:
                loop = list(path)[path[link]:]
                names = " -> ".join(repr(parent_joint[k].name) for k in reversed(loop))
                culprit = parent_joint[loop[0]].name
                rootless = "" if any(k not in parent_joint for k in links) else (
                    ", so no link is the root")
                raise RobotModelError(source, lines[culprit], f"joint {culprit!r}",
                                      f"joints {names} form a cycle{rootless}")
            path[link] = len(path)
            link = parent_joint[link].parent
        reaches_root.update(path)
    roots = [name for name in links if name not in parent_joint]
    robot_element = f"robot {robot.attributes.get('name', '')!r}"
    if not roots:
        raise RobotModelError(source, robot.line, robot_element, "no root link (no <link> at all)")
    if len(roots) > 1:
        listed = ", ".join(f"{name!r} (line {links[name]})" for name in roots[:6])
        more = "" if len(roots) <= 6 else f" and {len(roots) - 6} more"
        raise RobotModelError(source, links[roots[1]], robot_element,
                              f"several root links: {listed}{more}; a robot has one "
                              "(join the others to it with joints)")
    return roots[0], children


def _drives(joints: list[Joint], joint_names: Sequence[str], lines: dict[str, int],
            source: str) -> dict[str, Drive]:
    """Each moving joint's drive: itself, or the driven joint its mimic chain ends in.
    A chain that reaches a joint the model lacks, or one that is not driven, warns once and
    leaves the joint undriven (at its origin, unpublished); a chain that loops is refused."""
    by_name = {joint.name: joint for joint in joints}
    index = {name: k for k, name in enumerate(joint_names)}
    drives: dict[str, Drive] = {name: Drive(k, 1.0, 0.0) for k, name in enumerate(joint_names)}
    for joint in joints:
        if joint.mimic is None or joint.type not in MOVING_TYPES:
            continue
        multiplier, offset = 1.0, 0.0
        chain = [joint.name]
        current = joint
        while current.mimic is not None and current.type in MOVING_TYPES:
            mimic = current.mimic
            offset += multiplier * mimic.offset
            multiplier *= mimic.multiplier
            if mimic.joint in chain:
                names = " -> ".join(repr(n) for n in chain[chain.index(mimic.joint):] + [mimic.joint])
                raise RobotModelError(source, lines[joint.name], f"joint {joint.name!r}",
                                      f"mimic cycle: {names}")
            master = by_name.get(mimic.joint)
            if master is None or master.type not in MOVING_TYPES:
                why = "lacks" if master is None else f"has as a {master.type} joint, not driven"
                warnings.warn(
                    f"{source}:{lines[current.name]}: joint {current.name!r} mimics joint "
                    f"{mimic.joint!r}, which the model {why}: joint {joint.name!r} stays at its "
                    "origin and is not published",
                    RobotModelWarning,
                    stacklevel=5,  # the caller of from_urdf or from_urdf_string
                )
                break
            chain.append(master.name)
            current = master
        else:
            drives[joint.name] = Drive(index[current.name], multiplier, offset)
    return drives


def describe(robot: Element, source: str) -> Description:
    """The checked description in ``robot`` (the document's root element)."""
    if robot.tag != "robot":
        raise RobotModelError(source, robot.line, f"<{robot.tag}>",
                              "no <robot> element (the document's root must be <robot>)")
    links: dict[str, int] = {}
    joints: list[Joint] = []
    lines: dict[str, int] = {}
    for xml in robot.children:
        if xml.tag == "link":
            name = _required(xml, "name", source, "link")
            if name in links:
                raise RobotModelError(source, xml.line, f"link {name!r}",
                                      f"named twice (first on line {links[name]})")
            links[name] = xml.line
            _check_link_numbers(xml, source, f"link {name!r}")
        elif xml.tag == "joint":
            joint = _joint(xml, source)
            if joint.name in lines:
                raise RobotModelError(source, xml.line, f"joint {joint.name!r}",
                                      f"named twice (first on line {lines[joint.name]})")
            lines[joint.name] = xml.line
            joints.append(joint)
    root, children = _check_tree(links, joints, lines, robot, source)
    order: list[str] = []
    stack = [root]
    while stack:  # depth first, children in document order
        link = stack.pop()
        order.append(link)
        stack.extend(joint.child for joint in reversed(children[link]))
    joint_names = [j.name for j in joints if j.type in MOVING_TYPES and j.mimic is None]
    drives = _drives(joints, joint_names, lines, source)
    return Description(robot.attributes.get("name", ""), root, order, joints, joint_names, drives)

"""Copying a message into another class of the same shape: tf2py's to rclpy's and back.

Every ``Buffer`` call already reads any object of the right shape (rclpy's
``geometry_msgs.msg.TransformStamped``, a stamp with ``sec``/``nanosec``). The way back needs
a copy: rclpy's publishers and message constructors take their own classes only. ::

    from geometry_msgs.msg import TransformStamped as RosTransformStamped

    t = buffer.lookup_transform("map", "base_link", Time())
    publisher.publish(convert(t, RosTransformStamped))

Fields are matched by name, recursively (``header.stamp.sec``...): a ROS 2 message class
lists them with ``get_fields_and_field_types()``, a tf2py message with its slots. Nothing
here imports ROS.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .messages import _Message
from .time import Duration, Time, to_nanoseconds

__all__ = ["convert", "message_fields"]

M = TypeVar("M")


def message_fields(message_type: type) -> tuple[str, ...] | None:
    """The field names of a ROS 2 (rosidl) or tf2py message class; ``None`` for a leaf
    (a number, a string, a tf2py ``Time``)."""
    rosidl = getattr(message_type, "get_fields_and_field_types", None)
    if rosidl is not None:
        return tuple(rosidl())
    if isinstance(message_type, type) and issubclass(message_type, _Message):
        return message_type._fields
    return None


def _copy_into(source: Any, destination: Any, path: str) -> None:
    destination_type = type(destination)
    for name in message_fields(destination_type) or ():
        try:
            value = getattr(source, name)
        except AttributeError:
            raise TypeError(
                f"cannot convert {type(source).__qualname__} to {destination_type.__qualname__}: "
                f"it has no field {path}{name}"
            ) from None
        current = getattr(destination, name)
        if current.__class__ in (Time, Duration):
            # tf2py's immutable stamps: built from what the source holds (sec/nanosec,
            # nanoseconds or seconds), as every other call reads a stamp.
            value = current.__class__.from_nanoseconds(to_nanoseconds(value, f"{path}{name}"))
        elif message_fields(type(current)) is not None:
            _copy_into(value, current, f"{path}{name}.")
            continue
        elif isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # rclpy's float fields refuse ints
        try:
            setattr(destination, name, value)
        except (AssertionError, TypeError, ValueError) as exc:
            raise TypeError(
                f"cannot convert {type(source).__qualname__} to {destination_type.__qualname__}: "
                f"field {path}{name} = {value!r} does not fit ({exc or type(exc).__name__})"
            ) from None


def convert(message: Any, message_type: type[M]) -> M:
    """A new ``message_type`` (built with no arguments) holding ``message``'s fields, copied
    by name at every level: tf2py's ``TransformStamped`` to rclpy's
    ``geometry_msgs.msg.TransformStamped`` and back, likewise for points, vectors, poses and
    their stamped forms. ``TypeError`` naming the field when the shapes differ."""
    if message_fields(message_type) is None:
        raise TypeError(
            f"convert() needs a message class (a ROS 2 message or a tf2py one), "
            f"got {message_type!r}"
        )
    out = message_type()
    _copy_into(message, out, "")
    return out

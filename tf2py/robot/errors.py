"""``RobotModelError``: a robot description that cannot be built, in one line."""

from __future__ import annotations

__all__ = ["RobotModelError", "RobotModelWarning"]


class RobotModelError(ValueError):
    """A URDF or xacro description that cannot be built into a ``RobotModel``.

    The message is one line naming the file (``<string>`` for text), the line where the
    parser knows it, the element and the problem, e.g.
    ``panda.urdf:42: joint 'j3': child link 'x' does not exist``.
    """

    def __init__(self, source: str, line: int | None, element: str, problem: str) -> None:
        where = source if line is None else f"{source}:{line}"
        what = f"{element}: {problem}" if element else problem
        # One line, whatever the parts hold (names and xacro messages can carry newlines).
        message = " ".join(f"{where}: {what}".split())
        super().__init__(message)
        self.source = source
        self.line = line
        self.element = element


class RobotModelWarning(UserWarning):
    """A description that loads but not wholly as written (a mimic of a joint the model
    lacks: that joint stays at its origin); one line, naming the file, line and joint."""

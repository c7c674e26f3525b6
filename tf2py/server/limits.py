"""The buffer server's bounds (a user never needs to tune them) and the wording of a goal
whose timeout ran out."""

from __future__ import annotations

from ..buffer.exceptions import InvalidArgumentException, TransformException
from ..buffer.waits import waited_message

__all__ = ["MAX_WAITING_GOALS_PER_CLIENT", "MAX_WAITING_GOALS", "MAX_GOAL_TIMEOUT"]

#: Goals one client (one connection) may have waiting at once. A program rarely has more than
#: a few dozen; a client over this is looping without waiting for its answers.
MAX_WAITING_GOALS_PER_CLIENT = 10_000
#: Goals all clients together may have waiting (about 1 KB each: ~100 MB at the limit).
MAX_WAITING_GOALS = 100_000
#: The longest timeout a goal may ask for, in seconds (tf2 users wait seconds; ask again for
#: longer).
MAX_GOAL_TIMEOUT = 3600.0
MAX_GOAL_TIMEOUT_NS = int(MAX_GOAL_TIMEOUT * 1e9)
# Messages handled per loop turn, and groups answered or goals expired per turn, so a flood on
# one side cannot starve the other.
BATCH = 256


def with_wait(exc: BaseException, waited_ns: int, timeout_ns: int) -> BaseException:
    """The lookup's exception, its message saying how long the goal waited, worded as a
    local Buffer's timed-out lookup words it."""
    if not isinstance(exc, TransformException) or isinstance(exc, InvalidArgumentException):
        return exc
    exc.args = (waited_message(exc, waited_ns / 1e9, timeout_ns / 1e9),)
    return exc

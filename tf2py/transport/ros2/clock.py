"""``SimClock`` for ``ros2://`` addresses: follows ROS 2's ``/clock`` (rosgraph_msgs/Clock),
with the API of tf2py's SimClock (``now``, ``wait_for_time``, jump callbacks, ``stats``,
``close``), so ``SimClock(core="ros2://")`` can simply hand over to it."""

from __future__ import annotations

from typing import Any

from ..clock import ClockPublisher, FedSimClock, SampleClockPublisher, SimClock
from ..lifetime import release_all, weak_callback

__all__ = ["Ros2SimClock", "Ros2ClockPublisher"]


def _refuse_keys(keys: Any) -> None:
    from . import transport

    transport.refuse_keys(keys)


class Ros2ClockPublisher(SampleClockPublisher):
    """Publishes simulated time on ROS 2's ``/clock`` (rosgraph_msgs/Clock, best effort, as
    ``ros2 bag play --clock`` does), with the API of tf2py's ClockPublisher. Never blocks."""

    def __init__(self, core: str | None = None, keys: Any = None) -> None:
        from ..address import core_address
        from . import types
        from .cdr import encode_time
        from .participant import CLOCK_WRITER_QOS, Participant

        _refuse_keys(keys)
        address = core_address(core)
        participant = Participant.acquire(address)
        try:
            writer = participant.writer("rt/clock", types.Clock, CLOCK_WRITER_QOS)
        except BaseException:
            participant.release()
            raise
        self._start(address, encode_time, writer.write,
                    release_all(writer.close, participant.release))


class Ros2SimClock(FedSimClock):
    """Follows ``/clock`` on the ROS 2 graph at ``core`` (``ros2://`` or ``ros2://DOMAIN``).

    ``now()`` -> the latest ``Time`` received (``Time()`` until the first tick);
    ``add_jump_callback(fn)``: ``fn(jump)`` each time the time goes backwards, called on the
    receive thread as the tick arrives. ``close()``; a context manager.
    """

    def __init__(self, core: str | None = None, keys: Any = None) -> None:
        from ..address import core_address
        from . import ClockSubscription

        _refuse_keys(keys)
        self._start(core_address(core))
        # The participant keeps its callbacks: a weak one lets an unclosed clock be collected
        self._source = ClockSubscription(self.address, weak_callback(self._tick))
        self._watch_source()

    def stats(self) -> dict[str, Any]:
        stats = super().stats()
        dropped = stats["dropped"]
        participant = getattr(self._source, "_participant", None)
        if participant is not None:  # undecodable ticks are counted by the participant
            for cause, n in participant.dropped.snapshot().items():
                dropped[cause] = dropped.get(cause, 0) + n
        return stats


ClockPublisher.register(Ros2ClockPublisher)
SimClock.register(Ros2SimClock)

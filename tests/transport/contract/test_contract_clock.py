"""``/clock`` on every bus: a ``SimClock`` is zero until its first tick, follows a
``ClockPublisher``, calls its jump callbacks with the jump when the time goes backwards (a
callback that raises is counted and stops nothing) and no more once removed."""

from __future__ import annotations

from contract_support import DISCOVERY_TIMEOUT
from helpers import wait_for
from tf2py import Time
from tf2py.transport.clock import ClockPublisher, SimClock, TimeJump


def reach(publisher, clock, seconds: float) -> None:
    """Publish ``seconds`` until ``clock`` shows it (/clock is best effort, as in ROS 2)."""
    def shown() -> bool:
        publisher.publish(seconds)
        return clock.now() == Time.from_seconds(seconds)

    wait_for(shown, DISCOVERY_TIMEOUT, interval=0.05, message=f"the clock at {seconds} s")


def test_a_sim_clock_follows_the_bus_and_reports_backward_jumps(bus):
    jumps: list[TimeJump] = []

    def fails(jump: TimeJump) -> None:
        raise RuntimeError("a broken jump callback")

    with SimClock(core=bus.address) as clock, ClockPublisher(core=bus.address) as publisher:
        assert clock.now() == Time()
        assert clock.wait_for_time(0.0) is False
        clock.add_jump_callback(fails)
        clock.add_jump_callback(jumps.append)
        reach(publisher, clock, 30.0)
        assert clock.wait_for_time(0.0) is True
        reach(publisher, clock, 12.5)  # backwards
        wait_for(lambda: jumps, 10, message="the jump callback")
        assert (jumps[0].previous, jumps[0].current) == (Time.from_seconds(30.0),
                                                         Time.from_seconds(12.5))
        assert jumps[0].delta.to_seconds() == -17.5
        wait_for(lambda: clock.stats()["dropped"].get("callback", 0) >= 1, 10)
        clock.remove_jump_callback(jumps.append)
        clock.remove_jump_callback(jumps.append)  # not registered any more: no error
        reach(publisher, clock, 40.0)
        reach(publisher, clock, 1.0)  # backwards again, nobody listening
        wait_for(lambda: clock.stats()["jumps"] >= 2, 10)
        assert len(jumps) == 1

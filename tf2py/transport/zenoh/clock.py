"""``/clock`` on Zenoh, as rmw_zenoh carries it: ``ClockPublisher`` and ``SimClock`` for
``zenoh://`` addresses.

rosgraph_msgs/msg/Clock in CDR on ``<domain>/clock/rosgraph_msgs::msg::dds_::Clock_/<hash>``
with rclcpp's ClockQoS (best effort, keep last 1). ``/clock`` is a global name: a node in a
namespace still uses ``/clock``, so the address's namespace does not apply.
"""

from __future__ import annotations

from typing import Any

from ..clock import ClockPublisher, FedSimClock, SampleClockPublisher, SimClock
from ..lifetime import weak_callback
from ..ros2 import cdr
from . import wire
from .address import ZenohAddress, parse_zenoh_address
from .endpoint import Publisher, Subscription, Topic

__all__ = ["CLOCK_TYPE_NAME", "CLOCK_TYPE_HASH", "clock_topic", "ZenohClockPublisher",
           "ZenohSimClock"]

CLOCK_TYPE_NAME = "rosgraph_msgs::msg::dds_::Clock_"
#: REP-2011's type hash of rosgraph_msgs/msg/Clock (Jazzy, Kilted).
CLOCK_TYPE_HASH = "RIHS01_692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564"


def clock_topic(address: ZenohAddress) -> Topic:
    """``/clock`` on the address's domain, with rclcpp's ClockQoS."""
    return Topic("/clock", wire.data_keyexpr(address.domain, "/clock", CLOCK_TYPE_NAME,
                                             CLOCK_TYPE_HASH),
                 CLOCK_TYPE_NAME, CLOCK_TYPE_HASH, reliable=False, transient_local=False,
                 publisher_depth=1, subscription_depth=1)


class ZenohClockPublisher(SampleClockPublisher):
    """Publishes simulated time on ``/clock`` (as ``ros2 bag play --clock`` does). Never
    blocks."""

    def __init__(self, address: str, keys: Any = None):
        parsed = parse_zenoh_address(address)
        publisher = Publisher(parsed, clock_topic(parsed), keys)
        self._start(address, cdr.encode_time, publisher.put, publisher.close)


class ZenohSimClock(FedSimClock):
    """Follows ``/clock`` on the Zenoh network of ``address``: ``now()`` is the latest time
    received (``Time()`` before the first tick); jump callbacks are called on the receive
    thread when the time goes backwards. ``close()``; a context manager."""

    _name = "tf2py-zenoh-sim-clock"

    def __init__(self, address: str, keys: Any = None):
        self._start(address)
        parsed = parse_zenoh_address(address)
        # Zenoh keeps its callbacks: a weak one lets an unclosed clock be collected
        self._source = Subscription(parsed, clock_topic(parsed),
                                    weak_callback(self._on_sample), keys)
        self._watch_source()

    def _on_sample(self, sample: Any) -> None:
        try:
            wire.decode_attachment(
                None if sample.attachment is None else sample.attachment.to_bytes())
            stamp_ns = cdr.decode_time(sample.payload.to_bytes())
        except (wire.WireError, cdr.CdrError) as exc:
            self.dropped.drop(exc.cause, f"/clock: {exc}")
            return
        self._tick(stamp_ns)


ClockPublisher.register(ZenohClockPublisher)
SimClock.register(ZenohSimClock)

"""A ROS 2 graph as ``tf2py bridge`` uses it: one DDS participant of the bridge's own, which
ignores its own writers, so nothing the bridge sends is heard back (ROS 2 messages carry no
authority to tell them apart)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..bridge import BusSide

if TYPE_CHECKING:
    from ..interface import Transport
    from ..listener import TransformBatch

__all__ = ["Ros2BridgeSide"]


class Ros2BridgeSide(BusSide):
    """``BusSide`` on one private participant (``ignore_local``); keys are not used."""

    def __init__(self, transport: Transport, address: str, authority: str, keys: Any = None):
        from .participant import Participant

        super().__init__(transport, address, authority, None)
        self.participant = Participant(address, ignore_local=True)

    def subscribe(self, on_batch: Callable[[TransformBatch], None]) -> None:
        from .tf import Ros2TransformSubscriber

        self.subscriber = Ros2TransformSubscriber(self.address, on_batch,
                                                  participant=self.participant)

    def broadcaster(self) -> Any:
        if self._broadcaster is None:
            from .tf import Ros2TransformBroadcaster

            self._broadcaster = Ros2TransformBroadcaster(
                self.address, self.authority, participant=self.participant)
        return self._broadcaster

    def static_broadcaster(self) -> Any:
        if self._static is None:
            from .tf import Ros2StaticTransformBroadcaster

            self._static = Ros2StaticTransformBroadcaster(
                self.address, self.authority, participant=self.participant)
        return self._static

    def _parts(self) -> list[Any]:
        return super()._parts() + [self.participant]

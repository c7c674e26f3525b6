"""A Zenoh network as ``tf2py bridge`` uses it: the bridge's subscriber ignores the samples of
its own publishers on that side (known by their rmw_zenoh GIDs), so nothing the bridge sends
is heard back; Zenoh samples carry no authority to tell them apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..bridge import BusSide

if TYPE_CHECKING:
    from ..interface import Transport
    from ..listener import TransformBatch

__all__ = ["ZenohBridgeSide"]


class ZenohBridgeSide(BusSide):
    """``BusSide`` whose subscriber drops what this side's own broadcasters published."""

    def __init__(self, transport: Transport, address: str, authority: str, keys: Any = None):
        super().__init__(transport, address, authority, keys)
        self._own_gids: set[bytes] = set()

    def subscribe(self, on_batch: Callable[[TransformBatch], None]) -> None:
        from .tf import ZenohTransformSubscriber

        self.subscriber = ZenohTransformSubscriber(self.address, on_batch, self.keys,
                                                   ignore_gids=self._own_gids)

    def broadcaster(self) -> Any:
        if self._broadcaster is None:
            from .tf import ZenohTransformBroadcaster

            self._broadcaster = ZenohTransformBroadcaster(self.address, self.authority,
                                                          self.keys)
            self._own_gids.add(self._broadcaster.gid)
        return self._broadcaster

    def static_broadcaster(self) -> Any:
        if self._static is None:
            from .tf import ZenohStaticTransformBroadcaster

            self._static = ZenohStaticTransformBroadcaster(self.address, self.authority,
                                                           self.keys)
            self._own_gids.add(self._static.gid)
        return self._static

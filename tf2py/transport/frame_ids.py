"""tf2's rule for a leading ``/`` on a frame id, the same on every bus: ids travel as their
sender wrote them (so ``tf2py doctor`` can tell who sends ``/base_link``); a receiver that
stores them strips one leading ``/`` (the buffer does, as tf2's ``setTransform`` does) and
counts it per sender; a static set, latched by a broadcaster or a core, is keyed by the
stripped child id, so ``/laser`` and ``laser`` are one frame there too."""

from __future__ import annotations

import logging
from collections.abc import Sequence

__all__ = ["strip_leading_slash", "leading_slashes", "SlashCounter"]

logger = logging.getLogger("tf2py.transport")

#: Senders whose count is kept (each further one is added to the total only).
_MAX_SENDERS = 1000


def strip_leading_slash(frame_id: str) -> str:
    """``frame_id`` without one leading ``/`` (tf2 strips exactly one)."""
    return frame_id[1:] if frame_id[:1] == "/" else frame_id


def leading_slashes(parents: Sequence[str], children: Sequence[str]) -> int:
    """How many of the frame ids start with ``/`` (one C-level scan when none does, the
    usual case, so a listener pays next to nothing per message)."""
    if len(parents) == 1:
        return (parents[0][:1] == "/") + (children[0][:1] == "/")
    joined = "\n" + "\n".join(parents) + "\n" + "\n".join(children)
    if "\n/" not in joined:
        return 0
    return sum(1 for f in (*parents, *children) if f[:1] == "/")


class SlashCounter:
    """Frame ids received with a leading ``/``, per sender (authority); the first from each
    sender is logged once. ``snapshot()`` -> ``{authority: count}``."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.total = 0
        self._by_sender: dict[str, int] = {}

    def count(self, authority: str, parents: Sequence[str], children: Sequence[str]) -> None:
        """Count the leading slashes of one message's frame ids."""
        n = leading_slashes(parents, children)
        if not n:
            return
        self.total += n
        seen = self._by_sender.get(authority)
        if seen is None:
            if len(self._by_sender) >= _MAX_SENDERS:
                return
            example = next(f for f in (*parents, *children) if f[:1] == "/")
            logger.warning("%s: %s sends frame ids with a leading '/' (e.g. %r); stored "
                           "without it, as tf2 does (tf2py doctor names every such sender)",
                           self.owner, authority, example[:80])
            seen = 0
        self._by_sender[authority] = seen + n

    def snapshot(self) -> dict[str, int]:
        """Frame ids with a leading ``/`` received, per sender."""
        return dict(self._by_sender)

"""tf2py fleet: one Buffer and lookup service for every robot on a Zenoh domain.

``names`` (robots from key expressions and liveliness tokens, frame prefixes), ``world``
(``--world`` files), ``robots`` (joins, leaves, stale robots), ``queues`` (per-robot bounds),
``ingest`` (samples into the Buffer in batches), ``service``
(``Fleet``, which ties them together). Zenoh is imported only when a Fleet starts.
"""

from __future__ import annotations

__all__ = ["Fleet"]


def __getattr__(name: str) -> object:  # the zenoh extra is optional: import the service on first use
    if name == "Fleet":
        from .service import Fleet

        return Fleet
    raise AttributeError(name)

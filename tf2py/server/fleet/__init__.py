"""tf2py fleet: one Buffer and lookup service for every robot on a Zenoh domain.

``names`` (robots from key expressions and liveliness tokens, frame prefixes), ``world``
(``--world`` files), ``robots`` (joins, leaves, stale robots), ``slots`` (the robots held
now and the bounds on them: in total, per Zenoh session, names within a byte budget),
``queues`` (per-robot bounds on samples), ``ingest`` (samples into the Buffer in batches;
forgetting a robot gone for ``--stale-after``), ``health`` (``--stats``: rates, drops, lag,
bytes, the router watch), ``service`` (``Fleet``, which ties them together). Lookups go
through the buffer server's Zenoh link (``tf2py.server.zenoh_link``). Zenoh is imported
only when a Fleet starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["Fleet"]

if TYPE_CHECKING:
    # What the lazy ``__getattr__`` below returns, for mypy and pyright (never run).
    from .service import Fleet as Fleet
else:  # a module __getattr__ would make every unknown name Any to type checkers

    def __getattr__(name: str) -> object:
        if name == "Fleet":  # the zenoh extra is optional: import the service on first use
            from .service import Fleet

            return Fleet
        raise AttributeError(name)

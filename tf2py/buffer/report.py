"""tf2's text reports of a store (allFramesAsString, allFramesAsYAML) and ``frames_info``,
from the kernel's frame table: rows of (child, latest parent, samples, latest stamp ns,
oldest stamp ns, is_static, authority) per frame with a cache, in registration order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .time import seconds_tf2

__all__ = ["frames_as_string", "frames_info", "frames_as_yaml"]


def frames_as_string(table: Iterable[tuple[Any, ...]]) -> str:
    """``Frame <child> exists with parent <parent>.`` per frame that has a cache."""
    return "".join("Frame %s exists with parent %s.\n" % (row[0], row[1]) for row in table)


def frames_info(table: Iterable[tuple[Any, ...]]) -> dict[str, dict[str, Any]]:
    """Per child frame with data: parent, broadcaster, rate (Hz, as tf2's yaml), the stamps,
    the sample count and the span in seconds (computed as tf2 does)."""
    out: dict[str, dict[str, Any]] = {}
    for name, parent, length, latest, oldest, is_static, authority in table:
        if length == 0:
            continue
        span = seconds_tf2(latest - oldest)
        out[name] = {
            "parent": parent,
            "broadcaster": "no recorded authority" if authority is None else authority,
            "rate": length / max(span, 1e-4),
            "most_recent_ns": latest,
            "oldest_ns": oldest,
            "buffer_length": length,
            "buffer_seconds": span,
            "is_static": is_static,
        }
    return out


def frames_as_yaml(info: dict[str, dict[str, Any]]) -> str:
    """tf2's allFramesAsYAML layout from ``frames_info``: times as tf2 prints them."""
    parts = []
    for child, entry in info.items():
        parts.append(
            "%s: \n  parent: '%s'\n  broadcaster: '%s'\n  rate: %.3f\n"
            "  most_recent_transform: %.6f\n  oldest_transform: %.6f\n  buffer_length: %.3f\n"
            % (
                child,
                entry["parent"],
                entry["broadcaster"],
                entry["rate"],
                seconds_tf2(entry["most_recent_ns"]),
                seconds_tf2(entry["oldest_ns"]),
                entry["buffer_seconds"],
            )
        )
    return "".join(parts)

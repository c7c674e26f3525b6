"""What the doctor reports: one ``Finding`` per problem, worded once here so that the command
line, ``--json`` and the tests read the same text."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Finding", "cut"]

#: Longest frame id, authority or other input quoted in a message, in characters.
MAX_QUOTED = 80


def cut(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis and the full length
    when cut), for quoting inputs that may be long or hostile in a one-line message."""
    one_line = " ".join(str(text).split()) if ("\n" in text or "\r" in text) else str(text)
    if len(one_line) <= limit:
        return one_line
    return f"{one_line[:limit]}... ({len(one_line)} characters)"


@dataclass(frozen=True)
class Finding:
    """One problem: ``check`` names the kind (``two_authorities``, ``parent_changes``,
    ``unconnected_trees``, ``frame_loop``, ``clock_ahead``, ``clock_behind``,
    ``sim_time_mismatch``, ``static_on_tf``, ``dynamic_on_tf_static``, ``static_and_dynamic``,
    ``low_rate``, ``irregular_rate``, ``gap``, ``sent_once``, ``invalid_quaternion``,
    ``invalid_value``, ``leading_slash``); ``frames`` and ``authorities`` what it is about;
    ``problem`` and ``fix`` one sentence each; ``details`` numbers for machines (seconds, Hz)."""

    check: str
    problem: str
    fix: str
    frames: tuple[str, ...] = ()
    authorities: tuple[str, ...] = ()
    details: dict[str, object] = field(default_factory=dict)

    def line(self) -> str:
        """The one line a user reads: the problem, then how to fix it."""
        return f"[{self.check}] {self.problem} Fix: {self.fix}"

    def as_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "problem": self.problem,
            "fix": self.fix,
            "frames": list(self.frames),
            "authorities": list(self.authorities),
            "details": dict(self.details),
        }

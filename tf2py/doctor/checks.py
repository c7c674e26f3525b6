"""The doctor's checks: from ``Observations`` to a list of ``Finding``s, each with its fix.

Every threshold below says why it has its value. They were tuned so that the real, clean
recordings in the project's shared data (a simulated TurtleBot 4 with Nav2, a ROS 2 and a
ROS 1 bag of a small robot, ROS 1 turtlesim) give no finding at all, while each problem built
on purpose in the tests is found with a margin.
"""

from __future__ import annotations

from collections.abc import Iterable

from .findings import Finding, cut
from .observations import ChildRecord, Observations

__all__ = ["diagnose", "Thresholds", "recording_time_base_s"]

NS = 1_000_000_000


class Thresholds:
    """The numbers behind the checks (seconds and Hz); see each for its reason."""

    #: A stamp more than this ahead of the receiver's clock cannot be latency: its sender's
    #: clock runs ahead (or it post-dates on purpose by more than tf2's usual tolerances).
    #: Nav2's AMCL post-dates map->odom by its transform_tolerance (1 s by default: map->odom
    #: is 1.0 s ahead of the other frames in the shared data's TurtleBot recording), which is
    #: legitimate practice.
    ahead_s = 1.5
    #: A median delay (receive time minus stamp) above this is not transport latency either
    #: (a loaded Wi-Fi link stays under 0.2 s): a clock behind ours, or stale stamps. Lookups
    #: at "now" then extrapolate or wait that long.
    behind_s = 1.5
    #: Stamps this far from the receiver's clock (a day) are another time base altogether:
    #: simulated time on one side, the wall clock on the other. (In a bag whose frames are
    #: all that far from its log times, the recorder ran on the wall clock while the robot
    #: ran on simulated time, as in the shared TurtleBot recording: not a fault of the tree.)
    other_time_base_s = 86_400.0
    #: A frame sent on /tf whose value never changes, this often or more, belongs on
    #: /tf_static (ROS 1's static_transform_publisher habit of re-sending at 10-100 Hz).
    #: Below it a repeated constant may be a deliberate heartbeat (e.g. map->odom when
    #: localisation has not moved it).
    static_on_tf_hz = 20.0
    #: ... and only after this many identical samples over this long, so a robot standing
    #: still for a moment is not flagged.
    static_on_tf_samples = 50
    static_on_tf_span_s = 3.0
    #: A /tf_static child re-sent at this rate or more (with enough messages) is being used
    #: as a stream.
    static_stream_hz = 1.0
    static_stream_messages = 5
    #: Below this rate tf2's default 10 s cache holds fewer than 5 samples, and lookups
    #: between samples interpolate over seconds.
    low_rate_hz = 0.5
    #: A gap between consecutive stamps of a frame longer than both this and
    #: ``gap_factor`` times its median interval: lookups inside it interpolate over missing
    #: data, lookups at "now" during it fail with ExtrapolationException. Shorter pauses are
    #: what a loaded simulator or a Wi-Fi hiccup gives (the shared TurtleBot recording pauses
    #: 2.3 s under Gazebo, every frame at once), and lookup timeouts ride them out.
    gap_s = 3.0
    gap_factor = 5.0
    #: Irregular: more than this share of a frame's intervals are over twice or under half its
    #: median interval (a publisher starved of CPU, or bursts).
    irregular_share = 0.35
    #: Rates need at least this many samples to be judged.
    min_samples = 10


def diagnose(observations: Observations, thresholds: Thresholds | None = None,
             listened_s: float | None = None, recorded: bool = False) -> list[Finding]:
    """Every finding about what ``observations`` holds, in a stable order (by check, then
    frame). ``listened_s``: how long the receiver listened (else the span of receive times).
    ``recorded``: the receive times are a recorder's log times (a bag), whose clock may be
    another time base than the stamps' (see ``recording_time_base_s``)."""
    limits = thresholds or Thresholds()
    if listened_s is None:
        listened_s = observations.duration_ns / NS
    findings: list[Finding] = []
    findings += _leading_slashes(observations)
    findings += _dropped(observations)
    findings += _authorities(observations)
    findings += _parents(observations)
    findings += _trees(observations)
    base_s = recording_time_base_s(observations, limits) if recorded else 0.0
    findings += _clocks(observations, limits, base_s)
    for child in sorted(observations.children):
        record = observations.children[child]
        findings += _static_dynamic(child, record, limits)
        findings += _rates(child, record, limits, listened_s)
    return findings


def _names(items: Iterable[str]) -> str:
    return ", ".join(cut(item) for item in sorted(items))


def _leading_slashes(observations: Observations) -> list[Finding]:
    findings = []
    for frame in sorted(observations.leading_slash):
        authorities = observations.leading_slash[frame]
        findings.append(Finding(
            "leading_slash",
            f"frame '{cut(frame)}' is sent with a leading '/' (by {_names(authorities)}); "
            "tf2 strips it, so lookups of the name as sent fail.",
            f"send '{cut(frame.lstrip('/'))}' (ROS 2 frame ids have no leading '/', no tf_prefix).",
            frames=(frame,), authorities=tuple(sorted(authorities))))
    return findings


def _dropped(observations: Observations) -> list[Finding]:
    findings = []
    for (check, child, authority), entry in sorted(observations.dropped.items()):
        if check == "invalid_quaternion":
            findings.append(Finding(
                check,
                f"{entry.count} transform(s) of '{cut(child)}' from {cut(authority)} have a "
                f"non-unit quaternion (norm {entry.example}) and are dropped by every tf2 "
                "listener.",
                "normalise the rotation before sending (q / |q|); check the order x, y, z, w.",
                frames=(child,), authorities=(authority,),
                details={"count": entry.count, "norm": entry.example}))
        else:
            findings.append(Finding(
                check,
                f"{entry.count} transform(s) of '{cut(child)}' from {cut(authority)} are "
                f"invalid ({entry.example}) and are dropped by every tf2 listener.",
                "send finite numbers and two different, non-empty frame ids.",
                frames=(child,), authorities=(authority,),
                details={"count": entry.count, "reason": entry.example}))
    return findings


def _overlapping(spans: dict[str, list[int]]) -> list[str]:
    """Authorities whose time on /tf for one child overlaps another's."""
    items = sorted(spans.items(), key=lambda item: item[1][0])
    overlapping: set[str] = set()
    for i, (name, (_, last, _count)) in enumerate(items):
        for other, (first, _, _) in items[i + 1:]:
            if first <= last:
                overlapping.update((name, other))
    return sorted(overlapping)


def _authorities(observations: Observations) -> list[Finding]:
    findings = []
    for child in sorted(observations.children):
        record = observations.children[child]
        dynamic = _overlapping(record.dynamic_authorities)
        static = sorted(record.static_authorities) if len(record.static_authorities) > 1 else []
        for kind, names in (("/tf", dynamic), ("/tf_static", static)):
            if not names:
                continue
            findings.append(Finding(
                "two_authorities",
                f"'{cut(child)}' is published on {kind} by {len(names)} authorities at once "
                f"({_names(names)}); the tree jumps between their values.",
                f"stop all but one publisher of '{cut(child)}' (two nodes computing the same "
                "frame, e.g. two localisers or two robot_state_publishers).",
                frames=(child,), authorities=tuple(names)))
    return findings


def _parents(observations: Observations) -> list[Finding]:
    findings = []
    for child in sorted(observations.children):
        parents = observations.children[child].parents
        if len(parents) < 2:
            continue
        counts = ", ".join(f"'{cut(p)}' ({n})" for p, n in parents.items())
        findings.append(Finding(
            "parent_changes",
            f"'{cut(child)}' changes parent: {counts} transforms; a frame has one parent in "
            "tf2, the latest wins and lookups through it change tree.",
            f"give '{cut(child)}' one parent everywhere (tf is a tree: to relate two parents, "
            "publish the transform between them instead).",
            frames=(child, *parents), details={"parents": dict(parents)}))
    return findings


def _trees(observations: Observations) -> list[Finding]:
    parent_of = {child: r.latest_parent for child, r in observations.children.items()}
    if not parent_of:
        return []
    roots: dict[str, set[str]] = {}
    looped: list[str] = []
    for child in parent_of:
        frame, seen = child, {child}
        while frame in parent_of:
            frame = parent_of[frame]
            if frame in seen:
                looped.append(child)
                break
            seen.add(frame)
        else:
            roots.setdefault(frame, set()).update(seen)
    findings = []
    if len(roots) > 1:
        names = sorted(roots)
        listing = "; ".join(f"'{cut(r)}' ({len(roots[r])} frames)" for r in names[:6])
        more = f"; and {len(names) - 6} more" if len(names) > 6 else ""
        findings.append(Finding(
            "unconnected_trees",
            f"the frames form {len(roots)} unconnected trees, rooted at {listing}{more}; "
            "lookups between them fail with ConnectivityException.",
            f"publish the transform that joins them, e.g. `tf2py static-transform-publisher "
            f"--frame-id {cut(names[0])} --child-frame-id {cut(names[1])}` if it is fixed, "
            "or start the node that should publish it.",
            frames=tuple(names), details={"roots": names}))
    if looped:
        findings.append(Finding(
            "frame_loop",
            f"frames {_names(looped)} form a loop (each is another's parent); tf2 cannot "
            "look anything up through them.",
            "remove one of the transforms in the loop: each frame needs one parent, and the "
            "root none.",
            frames=tuple(sorted(looped))))
    return findings


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    middle = n // 2
    return float(ordered[middle]) if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def recording_time_base_s(observations: Observations, limits: Thresholds | None = None) -> float:
    """The offset (s) between a recording's stamps and its log times when they are two time
    bases (the median offset of its dynamic frames is a day or more: a simulated robot
    recorded on the wall clock), else 0. Clock offsets are then measured from it: between
    the recording's frames, not against the recorder's clock."""
    limits = limits or Thresholds()
    medians = [_median(offsets) for record in observations.authorities.values()
               for offsets in record.offsets_ns.values() if offsets]
    if not medians:
        return 0.0
    base_s = _median([int(m) for m in medians]) / NS
    return base_s if abs(base_s) >= limits.other_time_base_s else 0.0


def _clocks(observations: Observations, limits: Thresholds, base_s: float) -> list[Finding]:
    """Per publisher, its frames whose median offset (stamp minus receive time, less
    ``base_s``) is out of bounds, one finding per kind: a skewed clock shows in every frame
    it stamps; a bag, whose publishers are unknown, still shows which frames."""
    findings = []
    for authority in sorted(observations.authorities):
        kinds: dict[str, dict[str, float]] = {}
        for child, offsets in sorted(observations.authorities[authority].offsets_ns.items()):
            offset_s = _median(offsets) / NS - base_s
            if abs(offset_s) >= limits.other_time_base_s:
                kinds.setdefault("sim_time_mismatch", {})[child] = offset_s
            elif offset_s > limits.ahead_s:
                kinds.setdefault("clock_ahead", {})[child] = offset_s
            elif -offset_s > limits.behind_s:
                kinds.setdefault("clock_behind", {})[child] = offset_s
        for check, frames in sorted(kinds.items()):
            findings.append(_clock_finding(check, authority, frames))
    return findings


def _clock_finding(check: str, authority: str, frames: dict[str, float]) -> Finding:
    names = sorted(frames)
    offset_s = _median([int(v * NS) for v in frames.values()]) / NS
    who = (f"{cut(authority)} (frame{'s' if len(names) > 1 else ''} {_names(names[:5])}"
           f"{', ...' if len(names) > 5 else ''})")
    details: dict[str, object] = {"offset_s": round(offset_s, 6),
                                  "offsets_s": {f: round(v, 6) for f, v in frames.items()}}
    if check == "sim_time_mismatch":
        problem = (f"stamps from {who} are {offset_s:+.0f} s from the receiver's clock: one "
                   "side runs on simulated time, the other on the wall clock.")
        fix = ("run every node on the same time: all with use_sim_time and a /clock "
               "(`tf2py play BAG --clock`, `--use-sim-time`), or none.")
    elif check == "clock_ahead":
        problem = (f"stamps from {who} are {offset_s:.3f} s ahead of the receiver's clock; "
                   "lookups at those stamps extrapolate into the future.")
        fix = ("synchronise the clocks of the machines (chrony or NTP), or stamp with the time "
               "the data was measured.")
    else:
        problem = (f"stamps from {who} are {-offset_s:.3f} s behind the receiver's clock; "
                   "lookups at \"now\" extrapolate or wait that long.")
        fix = ("synchronise the clocks of the machines (chrony or NTP), and stamp with the "
               "time of the measurement, not of a stale copy.")
    return Finding(check, problem, fix, frames=tuple(names), authorities=(authority,),
                   details=details)


def _static_dynamic(child: str, record: ChildRecord, limits: Thresholds) -> list[Finding]:
    findings = []
    if record.static_count and record.dynamic_count:
        findings.append(Finding(
            "static_and_dynamic",
            f"'{cut(child)}' is sent on both /tf ({record.dynamic_count}) and /tf_static "
            f"({record.static_count}); tf2 then mixes a fixed and a moving transform.",
            f"send '{cut(child)}' on /tf only if it moves, on /tf_static only if it never does.",
            frames=(child,),
            authorities=tuple(sorted({*record.dynamic_authorities, *record.static_authorities}))))
        return findings
    stamps = sorted(set(record.stamps_ns))
    span_s = (stamps[-1] - stamps[0]) / NS if len(stamps) > 1 else 0.0
    rate = (len(stamps) - 1) / span_s if span_s > 0 else 0.0
    if (record.dynamic_count >= limits.static_on_tf_samples and not record.dynamic_values_change
            and span_s >= limits.static_on_tf_span_s and rate >= limits.static_on_tf_hz):
        findings.append(Finding(
            "static_on_tf",
            f"'{cut(child)}' never moves but is sent on /tf at {rate:.1f} Hz "
            f"({record.dynamic_count} identical transforms).",
            "publish it once on /tf_static (StaticTransformBroadcaster, `tf2py "
            "static-transform-publisher`, or a fixed joint in robot_state_publisher).",
            frames=(child,), authorities=tuple(sorted(record.dynamic_authorities)),
            details={"rate_hz": round(rate, 3), "samples": record.dynamic_count}))
    received = record.static_received_ns
    static_span_s = (received[-1] - received[0]) / NS if len(received) > 1 else 0.0
    static_rate = (len(received) - 1) / static_span_s if static_span_s > 0 else 0.0
    if len(record.static_values) > 1 or (
            record.static_count >= limits.static_stream_messages
            and static_rate >= limits.static_stream_hz):
        findings.append(Finding(
            "dynamic_on_tf_static",
            f"'{cut(child)}' is sent on /tf_static {record.static_count} times "
            f"with {len(record.static_values)} different values; /tf_static is latched (only "
            "the latest is kept, valid at all times), so its motion is lost.",
            f"send '{cut(child)}' on /tf with a TransformBroadcaster if it moves.",
            frames=(child,), authorities=tuple(sorted(record.static_authorities)),
            details={"messages": record.static_count, "values": len(record.static_values)}))
    return findings


def _rates(child: str, record: ChildRecord, limits: Thresholds,
           listened_s: float) -> list[Finding]:
    if record.static_count or not record.dynamic_count:
        return []
    authorities = tuple(sorted(record.dynamic_authorities))
    stamps = sorted(set(record.stamps_ns))
    if len(stamps) == 1:
        if listened_s < 2.0 / limits.low_rate_hz:
            return []  # too short a listen to tell "once" from "slowly"
        return [Finding(
            "sent_once",
            f"'{cut(child)}' was sent on /tf once in {listened_s:.1f} s; lookups at any "
            "other time extrapolate.",
            "publish it on /tf_static if it is fixed, else at a steady rate.",
            frames=(child,), authorities=authorities)]
    intervals = [b - a for a, b in zip(stamps, stamps[1:])]
    span_s = (stamps[-1] - stamps[0]) / NS
    rate = len(intervals) / span_s
    median_s = _median(intervals) / NS
    details: dict[str, object] = {"rate_hz": round(rate, 3), "median_interval_s": median_s}
    findings = []
    if rate < limits.low_rate_hz and span_s > 0:
        findings.append(Finding(
            "low_rate",
            f"'{cut(child)}' is sent at only {rate:.2f} Hz; tf2's 10 s cache holds "
            f"{10 * rate:.0f} samples and lookups interpolate over {1 / rate:.1f} s.",
            "publish it faster (10 Hz or more for a moving frame), or on /tf_static if it "
            "is fixed.",
            frames=(child,), authorities=authorities, details=details))
    if len(intervals) < limits.min_samples:
        return findings
    longest = max(intervals)
    if longest / NS > limits.gap_s and longest > limits.gap_factor * median_s * NS:
        at = stamps[intervals.index(longest)]
        findings.append(Finding(
            "gap",
            f"'{cut(child)}' stopped for {longest / NS:.2f} s (from stamp {at / NS:.3f}) in "
            f"a stream of {rate:.1f} Hz; lookups in the gap interpolate across it and "
            "lookups at \"now\" fail with ExtrapolationException.",
            "find what stalled its publisher (CPU, network, a blocked callback) or give "
            "lookups a timeout.",
            frames=(child,), authorities=authorities,
            details={**details, "gap_s": longest / NS, "at_s": at / NS}))
    odd = sum(1 for i in intervals if i > 2 * median_s * NS or i < 0.5 * median_s * NS)
    share = odd / len(intervals)
    # Two publishers at once interleave their stamps: two_authorities says so, and the
    # merged intervals say nothing of either publisher's own rate.
    if share > limits.irregular_share and not _overlapping(record.dynamic_authorities):
        findings.append(Finding(
            "irregular_rate",
            f"'{cut(child)}' arrives irregularly: {100 * share:.0f}% of its intervals are "
            f"under half or over twice the median {median_s * 1000:.1f} ms.",
            "publish it from a timer at a fixed rate, and check its publisher's CPU load.",
            frames=(child,), authorities=authorities, details={**details, "share": share}))
    return findings

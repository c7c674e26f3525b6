"""tf2py.doctor's checks, fed directly: each problem built on purpose is found (with the
fix in its line), and a clean stream of the same shape gives nothing."""

from __future__ import annotations

import random

import pytest

from tf2py.doctor import TF, TF_STATIC, Observations, diagnose

S = 1_000_000_000
T0 = 1_700_000_000 * S
IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def moving(i: int) -> tuple:
    return (0.01 * i, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def feed_stream(obs, parent, child, hz=20.0, seconds=5.0, start_s=0.0, authority="robot",
                offset_s=0.0, values=moving, times=None):
    """``child`` on /tf at ``hz``: received at T0 + t, stamped ``offset_s`` later."""
    if times is None:
        times = [start_s + i / hz for i in range(int(seconds * hz))]
    for i, t in enumerate(times):
        received = T0 + int(t * S)
        obs.add(received, TF, authority, [parent], [child], [received + int(offset_s * S)],
                [values(i)])


def clean(obs):
    feed_stream(obs, "odom", "base_link")
    obs.add(T0, TF_STATIC, "statics", ["base_link"], ["laser"], [T0], [IDENTITY])


def checks(obs) -> list[str]:
    return [finding.check for finding in diagnose(obs)]


def test_a_clean_tree_has_no_findings():
    obs = Observations()
    clean(obs)
    assert diagnose(obs) == []


def test_two_authorities_at_once_are_found_with_both_named():
    obs = Observations()
    clean(obs)
    feed_stream(obs, "odom", "base_link", authority="second", start_s=0.01)
    # (Their interleaved stamps also make the frame's rate irregular: found too.)
    finding = diagnose(obs)[0]
    assert finding.check == "two_authorities"
    assert set(finding.authorities) == {"robot", "second"}
    assert "Fix: stop all but one publisher" in finding.line()


def test_an_authority_that_takes_over_later_is_not_two_at_once():
    # A restarted publisher (new pid, new authority) follows the old one: no overlap.
    obs = Observations()
    feed_stream(obs, "odom", "base_link", seconds=2.0)
    feed_stream(obs, "odom", "base_link", authority="restarted", start_s=2.0, seconds=2.0)
    assert "two_authorities" not in checks(obs)


def test_a_parent_that_changes_is_found():
    obs = Observations()
    feed_stream(obs, "odom", "base_link", seconds=2.0)
    feed_stream(obs, "map", "base_link", start_s=2.0, seconds=2.0)
    assert checks(obs) == ["parent_changes"]


def test_unconnected_trees_name_their_roots_and_the_joining_command():
    obs = Observations()
    clean(obs)
    obs.add(T0, TF_STATIC, "statics", ["world"], ["camera"], [T0], [IDENTITY])
    (finding,) = diagnose(obs)
    assert finding.check == "unconnected_trees"
    assert finding.details["roots"] == ["odom", "world"]
    assert "static-transform-publisher --frame-id odom --child-frame-id world" in finding.fix


def test_a_loop_is_found():
    obs = Observations()
    obs.add(T0, TF_STATIC, "s", ["a", "b"], ["b", "a"], [T0, T0], [IDENTITY, IDENTITY])
    assert "frame_loop" in checks(obs)


@pytest.mark.parametrize("offset_s, check", [(3.0, "clock_ahead"), (-4.0, "clock_behind"),
                                             (-1.7e9, "sim_time_mismatch")])
def test_clock_offsets_are_found_per_publisher_with_the_offset(offset_s, check):
    obs = Observations()
    clean(obs)
    feed_stream(obs, "odom", "arm", authority="skewed", offset_s=offset_s)
    (finding,) = diagnose(obs)
    assert finding.check == check and finding.authorities == ("skewed",)
    assert finding.details["offset_s"] == pytest.approx(offset_s)


def test_usual_latency_and_post_dating_are_not_skew():
    obs = Observations()
    feed_stream(obs, "odom", "base_link", offset_s=-0.2)   # a slow link
    feed_stream(obs, "map", "odom", authority="amcl", offset_s=1.0)  # transform_tolerance
    assert diagnose(obs) == []


def test_a_constant_frame_on_tf_at_a_high_rate_belongs_on_tf_static():
    obs = Observations()
    clean(obs)
    feed_stream(obs, "base_link", "imu", hz=50.0, values=lambda i: IDENTITY)
    (finding,) = diagnose(obs)
    assert finding.check == "static_on_tf" and "/tf_static" in finding.fix


def test_a_constant_frame_at_a_low_rate_is_a_heartbeat_not_a_static():
    obs = Observations()
    feed_stream(obs, "map", "odom", hz=10.0, values=lambda i: IDENTITY)
    assert diagnose(obs) == []


def test_a_moving_frame_on_tf_static_is_found():
    obs = Observations()
    clean(obs)
    for i in range(5):
        obs.add(T0 + i * S, TF_STATIC, "arm", ["base_link"], ["gripper"], [T0 + i * S],
                [moving(i)])
    (finding,) = diagnose(obs)
    assert finding.check == "dynamic_on_tf_static"


def test_a_frame_on_both_topics_is_found():
    obs = Observations()
    clean(obs)
    obs.add(T0, TF_STATIC, "statics", ["odom"], ["base_link"], [T0], [IDENTITY])
    assert "static_and_dynamic" in checks(obs)


def test_a_low_rate_is_found():
    obs = Observations()
    feed_stream(obs, "odom", "base_link", hz=0.2, seconds=30.0)
    assert checks(obs) == ["low_rate"]


def test_a_gap_is_found_with_its_length():
    obs = Observations()
    times = [i / 20 for i in range(100)] + [10.0 + i / 20 for i in range(100)]
    feed_stream(obs, "odom", "base_link", times=times)
    (finding,) = diagnose(obs)
    assert finding.check == "gap" and finding.details["gap_s"] == pytest.approx(5.05)


def test_irregular_intervals_are_found_and_jitter_is_not():
    rng = random.Random(7)
    bursty, jittery, t, u = [], [], 0.0, 0.0
    for _ in range(200):
        t += rng.expovariate(20.0)
        bursty.append(t)
        u += 0.05 + rng.uniform(-0.01, 0.01)
        jittery.append(u)
    obs = Observations()
    feed_stream(obs, "odom", "base_link", times=bursty)
    assert checks(obs) == ["irregular_rate"]
    obs = Observations()
    feed_stream(obs, "odom", "base_link", times=jittery)
    assert checks(obs) == []


def test_non_unit_quaternions_are_counted_as_dropped():
    obs = Observations()
    clean(obs)
    obs.add(T0, TF, "bad", ["base_link"], ["wheel"], [T0], [(0, 0, 0, 0, 0, 0, 2.0)])
    (finding,) = diagnose(obs)
    assert finding.check == "invalid_quaternion" and finding.details["norm"] == "2"
    assert "normalise" in finding.fix


def test_nan_and_self_transforms_are_invalid():
    obs = Observations()
    obs.add(T0, TF, "bad", ["a", "c"], ["b", "c"], [T0, T0],
            [(float("nan"), 0, 0, 0, 0, 0, 1), IDENTITY])
    assert checks(obs) == ["invalid_value", "invalid_value"]


def test_a_leading_slash_is_found_and_the_tree_still_joins():
    obs = Observations()
    clean(obs)
    obs.add(T0, TF_STATIC, "ros1", ["/laser"], ["laser_mount"], [T0], [IDENTITY])
    (finding,) = diagnose(obs)
    assert finding.check == "leading_slash" and "'laser'" in finding.fix


def test_a_huge_frame_id_is_quoted_cut():
    obs = Observations()
    obs.add(T0, TF, "x", ["/" + "a" * 5000], ["b"], [T0], [IDENTITY])
    line = diagnose(obs)[0].line()
    assert len(line) < 600 and "(5001 characters)" in line


def test_the_topic_must_be_tf_or_tf_static():
    with pytest.raises(ValueError, match="'/tf' or '/tf_static'"):
        Observations().add(T0, "/odom", "x", [], [], [], [])


def test_a_recording_of_simulated_time_on_the_wall_clock_measures_offsets_between_frames():
    obs = Observations()
    feed_stream(obs, "odom", "base_link", offset_s=-1.7e9, authority="bag")
    feed_stream(obs, "odom", "wheel", offset_s=-1.7e9, authority="bag")
    feed_stream(obs, "base_link", "arm", offset_s=-1.7e9 + 3.0, authority="bag")
    assert checks(obs)[0] == "sim_time_mismatch"  # live: the doctor's clock is another
    (finding,) = diagnose(obs, recorded=True)
    assert finding.check == "clock_ahead" and finding.frames == ("arm",)
    assert finding.details["offset_s"] == pytest.approx(3.0)

"""lookup_velocity's errors: those of lookup_transform (types and tf2's wording) for what the
lookups cannot answer, InvalidArgumentException naming the argument for what can never be
valid, and nothing a caller passes crashes the process (also checked in a subprocess)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tf2py import (
    BackwardExtrapolationException,
    Buffer,
    ConnectivityException,
    Duration,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
    Time,
    TransformException,
    make_transform,
)
from tf2py.buffer.core import BufferCore

# Every kind of bad value, for every argument.
GARBAGE = [None, float("nan"), float("inf"), -1.0, 0, 0.0, "x", b"x", [], (1, 2), (1, 2, 3, 4),
           ("a", 0, 0), (float("nan"), 0, 0), (True, 0, 0), object(), {1: 2}, 10**30, -(10**30),
           np.float64("nan"), np.array([1.0, 2.0, 3.0]), Time(1), Duration(-1), Duration(0),
           "\ud800", "/base", "", "NO_PARENT", 3 + 4j, True]
ARGUMENTS = ("tracking_frame", "observation_frame", "time", "averaging_interval",
             "reference_frame", "reference_point", "reference_point_frame", "tf2_compatible")


def core_with_data(make=BufferCore):
    core = make()
    for k in range(21):
        core.set_transform(make_transform("odom", "base", (0.1 * k, 0, 0), stamp=1 + 0.1 * k), "x")
    core.set_transform_static(make_transform("island", "rock", stamp=2.0), "x")
    return core


def good_arguments():
    return dict(tracking_frame="base", observation_frame="odom", time=2.0, averaging_interval=0.2,
                reference_frame="odom", reference_point=(0.0, 0.0, 0.0),
                reference_point_frame="base", tf2_compatible=False)


@pytest.mark.parametrize("tf2_compatible", [False, True])
def test_unknown_frames_raise_lookup_transforms_errors(tf2_compatible):
    core = core_with_data()
    cases = [  # (arguments, the name and lookupTransform argument the message names)
        (("nowhere", "odom"), '"nowhere" passed to lookupTransform argument source_frame'),
        (("base", "nowhere"), '"nowhere" passed to lookupTransform argument target_frame'),
        (("base", "odom", "nowhere"), '"nowhere" passed to lookupTransform argument target_frame'),
        (("base", "odom", None, (1, 2, 3), "nowhere"),
         '"nowhere" passed to lookupTransform argument source_frame'),
    ]
    for frames, message in cases:
        args = list(frames[:2]) + [2.0, 0.2] + list(frames[2:])
        with pytest.raises(LookupException) as raised:
            core.lookup_velocity(*args, tf2_compatible=tf2_compatible)
        assert message + " does not exist." in str(raised.value)
    with pytest.raises(LookupException, match="Did you mean 'base'"):
        core.lookup_velocity("bas", "odom", 2.0, 0.2, tf2_compatible=tf2_compatible)


@pytest.mark.parametrize("tf2_compatible", [False, True])
def test_frame_ids_tf2_refuses_raise_invalid_argument(tf2_compatible):
    core = core_with_data()
    for bad in ("", "/base"):
        with pytest.raises(InvalidArgumentException, match="lookupTransform argument source_frame"):
            core.lookup_velocity(bad, "odom", 2.0, 0.2, tf2_compatible=tf2_compatible)


@pytest.mark.parametrize("tf2_compatible", [False, True])
def test_extrapolation_and_connectivity_are_lookup_transforms(tf2_compatible):
    core = core_with_data()
    with pytest.raises(BackwardExtrapolationException) as early:
        core.lookup_velocity("base", "odom", 0.5, 0.2, tf2_compatible=tf2_compatible)
    assert "when looking up transform from frame [base] to frame [odom]" in str(early.value)
    with pytest.raises(ForwardExtrapolationException):  # the window stops at the data; `time` not
        core.lookup_velocity("base", "odom", 9.0, 0.2, "odom", (1, 0, 0), "odom",
                             tf2_compatible=tf2_compatible)
    # nor with the default point: tf2 looks up reference <- tracking at `time` whatever it is
    with pytest.raises(ForwardExtrapolationException) as late:
        core.lookup_velocity("base", "odom", 9.0, 0.2, tf2_compatible=tf2_compatible)
    with pytest.raises(ForwardExtrapolationException) as plain:
        core.lookup_transform("odom", "base", 9.0)
    assert str(late.value) == str(plain.value)
    with pytest.raises(ConnectivityException) as apart:
        core.lookup_velocity("rock", "odom", 2.0, 0.2, tf2_compatible=tf2_compatible)
    assert "Could not find a connection between 'odom' and 'rock'" in str(apart.value)


@pytest.mark.parametrize("interval", [0, 0.0, -0.2, Duration(0), Duration(-1), float("nan"),
                                      float("inf"), "0.2", None, Time(1), True])
def test_a_bad_interval_raises_invalid_argument(interval):
    with pytest.raises(InvalidArgumentException, match="averaging_interval"):
        core_with_data().lookup_velocity("base", "odom", 2.0, interval)


@pytest.mark.parametrize("time", [float("nan"), float("inf"), "2.0", None, [2.0], True])
def test_a_bad_time_raises_invalid_argument(time):
    with pytest.raises(InvalidArgumentException, match="time"):
        core_with_data().lookup_velocity("base", "odom", time, 0.2)


@pytest.mark.parametrize("point", [(1, 2), (1, 2, 3, 4), [], "xyz", None, 5.0,
                                   (float("nan"), 0, 0), (0, float("inf"), 0), ("a", 0, 0),
                                   (True, 0, 0), (1 + 2j, 0, 0)])
def test_a_bad_reference_point_raises_invalid_argument_naming_it(point):
    with pytest.raises(InvalidArgumentException, match="reference_point") as raised:
        core_with_data().lookup_velocity("base", "odom", 2.0, 0.2, reference_point=point)
    assert isinstance(raised.value, ValueError)  # also a ValueError, as Python would


@pytest.mark.parametrize("argument", ["tracking_frame", "observation_frame", "reference_frame",
                                      "reference_point_frame"])
@pytest.mark.parametrize("bad", [3, None, b"base", ["base"]])
def test_a_frame_that_is_not_a_str_raises_invalid_argument_naming_it(argument, bad):
    args = good_arguments()
    if bad is None and argument in ("reference_frame", "reference_point_frame"):
        return  # None is their default
    args[argument] = bad
    with pytest.raises(InvalidArgumentException, match=argument):
        core_with_data().lookup_velocity(**args)


@pytest.mark.parametrize("flag", ["yes", None, 1, 0.0])
def test_tf2_compatible_must_be_a_bool(flag):
    with pytest.raises(InvalidArgumentException, match="tf2_compatible"):
        core_with_data().lookup_velocity("base", "odom", 2.0, 0.2, tf2_compatible=flag)


def test_unusual_but_valid_arguments_give_the_plain_answer():
    core = core_with_data()
    plain = core.lookup_velocity("base", "odom", 2.0, 0.2, "odom", (1.0, 2.0, 3.0), "base")

    class Name(str):
        pass

    for args in [
        (Name("base"), "odom", 2.0, 0.2, "odom", (1.0, 2.0, 3.0), "base"),
        ("base", "odom", np.float64(2.0), 0.2, "odom", (1.0, 2.0, 3.0), "base"),
        ("base", "odom", 2, Duration(0, 200_000_000), "odom", [1, 2, 3], "base"),
        ("base", "odom", Time(2), 0.2, "odom", np.array([1.0, 2.0, 3.0]), "base"),
        ("base", "odom", 2.0, 0.2, "odom", (np.float64(1), np.int64(2), 3.0), "base"),
    ]:
        assert core.lookup_velocity(*args) == plain, args
    assert core.lookup_velocity("base", "odom", 2.0, 0.2, tf2_compatible=np.True_) == \
        core.lookup_velocity("base", "odom", 2.0, 0.2, tf2_compatible=True)


def test_garbage_in_every_argument_raises_a_transform_exception():
    for make in (BufferCore, Buffer):
        core = core_with_data(make)
        for argument in ARGUMENTS:
            for value in GARBAGE:
                args = good_arguments()
                args[argument] = value
                try:
                    core.lookup_velocity(**args)
                except TransformException:
                    pass
                batch = dict(args, times=[args["time"]])
                del batch["time"]
                try:
                    core.lookup_velocities(**batch)
                except TransformException:
                    pass
        assert core.lookup_velocity(**good_arguments()).body_frame_id == "base"  # still works


def test_a_subprocess_survives_the_garbage():
    # The same storm in a fresh interpreter: a crash there is a non-zero exit, not a pass.
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "import test_velocity_errors as t\n"
        "t.test_garbage_in_every_argument_raises_a_transform_exception()\n"
        "print('ok')\n" % (__file__.rsplit("/", 1)[0],)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"

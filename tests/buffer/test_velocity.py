"""lookup_velocity's surface (API.md "Velocity"): the signature and its defaults, the message
classes, and the kernel's fast path agreeing with its checked path for every outcome.

The answers themselves: test_velocity_motion.py (closed forms), test_velocity_frames.py
(every reference frame and point), test_velocity_differences.py (finite differences),
test_velocity_tf2.py (tf2_compatible), test_velocity_batch.py, test_velocity_errors.py."""

from __future__ import annotations

import inspect
import threading

import numpy as np
import pytest

from tf2py import Buffer, Header, Time, Twist, Vector3, VelocityStamped, make_transform
from tf2py.buffer.core import BufferCore
from tf2py.buffer.errors import query_error
from tf2py.buffer.exceptions import TransformException
from tf2py.buffer.velocity_arguments import velocity_arguments


def moving_core(make=BufferCore):
    rng = np.random.default_rng(7)
    core = make()
    core.set_transform_static(make_transform("map", "odom", (1, 2, 3), rpy=(0.1, 0.2, 0.3)), "x")
    for k in range(40):
        t = 10.0 + 0.05 * k
        core.set_transform(make_transform("odom", "base", tuple(rng.uniform(-5, 5, 3)),
                                          rpy=tuple(rng.uniform(-3, 3, 3)), stamp=t), "x")
        core.set_transform(make_transform("base", "arm", (0.5, 0.0, 0.2), rpy=(0.0, 0.05 * k, 0.1),
                                          stamp=t), "x")
    return core


def test_signature_follows_the_contract():
    for cls in (BufferCore, Buffer):
        v = cls.lookup_velocity
        doc = v.__doc__ or ""
        assert "tracking_frame" in doc or "tracking" in doc
    core = moving_core()
    by_keyword = core.lookup_velocity(tracking_frame="arm", observation_frame="map", time=11.0,
                                      averaging_interval=0.2, reference_frame="odom",
                                      reference_point=(1, 2, 3), reference_point_frame="base",
                                      tf2_compatible=False)
    assert by_keyword == core.lookup_velocity("arm", "map", 11.0, 0.2, "odom", (1, 2, 3), "base")
    batch = inspect.signature(BufferCore.lookup_velocities)
    assert list(batch.parameters)[1:] == [
        "tracking_frame", "observation_frame", "times", "averaging_interval", "reference_frame",
        "reference_point", "reference_point_frame", "tf2_compatible"]


def test_defaults_are_the_observation_frame_and_the_tracking_frames_origin():
    core = moving_core()
    for flag in (False, True):
        short = core.lookup_velocity("arm", "map", 11.0, 0.2, tf2_compatible=flag)
        full = core.lookup_velocity("arm", "map", 11.0, 0.2, "map", (0, 0, 0), "arm",
                                    tf2_compatible=flag)
        assert short == full
        assert short.header.frame_id == "map" and short.body_frame_id == "arm"


def test_messages_have_defaults_equality_and_repr():
    assert Twist() == Twist(Vector3(), Vector3())
    v = VelocityStamped(body_frame_id="b", velocity=Twist(Vector3(1, 2, 3)))
    assert v.velocity.linear == Vector3(1, 2, 3) and v.header == Header()
    assert v != VelocityStamped(body_frame_id="c")
    assert "VelocityStamped(" in repr(v) and "body_frame_id='b'" in repr(v)
    got = moving_core().lookup_velocity("arm", "map", 11.0, 0.2)
    assert type(got) is VelocityStamped and type(got.velocity) is Twist
    assert type(got.header) is Header and type(got.header.stamp) is Time
    assert type(got.velocity.linear) is Vector3 and type(got.velocity.angular.z) is float


def _outcome(function, *args, **kwargs):
    try:
        v = function(*args, **kwargs)
    except TransformException as exc:
        return type(exc), str(exc)
    return repr(v)


def _checked_call(core, *arguments):
    """The kernel's checked call as core.py uses it: an error record becomes tf2's exception."""
    result = core._kernel.lookup_velocity(*arguments)
    if result.__class__ is tuple:
        raise query_error(core, result, (result[6], result[5]))
    return result


@pytest.mark.parametrize("make", [Buffer, BufferCore])
@pytest.mark.parametrize("tf2_compatible", [False, True])
def test_fast_path_equals_the_checked_path_for_every_outcome(make, tf2_compatible):
    """The kernel's own argument reading and the Python-checked call it falls back to give
    the same answers (repr for repr) and the same exceptions (type and message)."""
    core = moving_core(make)
    compared = ok = 0
    for t in (10.3, 10.51, 0, 11.9, 12.5, 9.0, Time.from_seconds(10.77)):
        for tracking, observation in (("base", "map"), ("arm", "odom"), ("map", "arm"),
                                      ("arm", "arm"), ("nope", "map"), ("/base", "map")):
            for extra in ((), ("odom",), ("arm", (1, 2, 3), "map"), ("base", (0.5, -1, 0)),
                          ("zz",), ("map", (0, 0, 0), "nope")):
                args = (tracking, observation, t, 0.2) + extra
                fast = _outcome(core.lookup_velocity, *args, tf2_compatible=tf2_compatible)
                full = list(args) + [None, (0.0, 0.0, 0.0), None][len(extra):]
                checked = _outcome(_checked_call, core,
                                   *velocity_arguments(*full, tf2_compatible))
                assert fast == checked, args
                compared += 1
                ok += isinstance(fast, str)
    assert compared == 252 and 30 < ok < 220  # both successes and errors were compared


def test_buffer_answers_from_one_state_while_another_thread_inserts():
    # Every answer is one of the two states' answers (the lookups of one call are not split
    # by an insert): a constant velocity of 1 m/s along x, whatever the thread does.
    buffer = Buffer()
    for k in range(200):
        buffer.set_transform(make_transform("map", "base", (0.01 * k, 0, 0), stamp=0.01 * k), "x")
    done = threading.Event()

    def insert():
        k = 200
        while not done.is_set() and k < 5000:
            buffer.set_transform(make_transform("map", "base", (0.01 * k, 0, 0), stamp=0.01 * k),
                                 "x")
            k += 1

    thread = threading.Thread(target=insert, daemon=True, name="velocity-inserter")
    thread.start()
    try:
        for _ in range(2000):
            v = buffer.lookup_velocity("base", "map", 0, 0.05)
            assert abs(v.velocity.linear.x - 1.0) < 1e-6
    finally:
        done.set()
        thread.join(10)

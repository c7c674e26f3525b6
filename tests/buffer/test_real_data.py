"""The transform store on real recordings that nobody on this project wrote.

nav2_turtlebot.mcap (see ../shared/data/README.md) holds a simulated TurtleBot's /tf,
/tf_static and /odom. The odometry node publishes odom->base_link on /tf and the same pose on
/odom with the same stamp, so a lookup of odom->base_link at every /odom stamp must give
back that /odom pose: an exact oracle. The bag is read with rosbags' generic reader here, not
with tf2py.bag, so the test depends on nothing else of ours than the buffer.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import SHARED_DATA
from tf2py import Time, make_transform
from tf2py.buffer.buffer import Buffer
from tf2py.buffer.core import BufferCore

NAV2 = SHARED_DATA / "nav2_turtlebot.mcap"

rosbags_highlevel = pytest.importorskip("rosbags.highlevel")


def _stamp_ns(header):
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


@pytest.fixture(scope="module")
def recording():
    """(transforms, statics, odometry) of the bag: lists of (parent, child, stamp_ns, 7
    values) and of (stamp_ns, frame_id, child_frame_id, 7 values)."""
    transforms, statics, odometry = [], [], []
    with rosbags_highlevel.AnyReader([NAV2]) as reader:
        for connection, _, raw in reader.messages():
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic in ("/tf", "/tf_static"):
                out = statics if connection.topic == "/tf_static" else transforms
                for t in msg.transforms:
                    tr, q = t.transform.translation, t.transform.rotation
                    out.append((t.header.frame_id, t.child_frame_id, _stamp_ns(t.header),
                                (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w)))
            elif connection.topic == "/odom":
                p, q = msg.pose.pose.position, msg.pose.pose.orientation
                odometry.append((_stamp_ns(msg.header), msg.header.frame_id, msg.child_frame_id,
                                 (p.x, p.y, p.z, q.x, q.y, q.z, q.w)))
    assert transforms and statics and len(odometry) > 2000
    return transforms, statics, odometry


def _time(stamp_ns):
    return Time.from_nanoseconds(stamp_ns)


def _fill(core, transforms, statics):
    """Insert one message object at a time, through the public API."""
    for parent, child, stamp_ns, values in statics:
        core.set_transform_static(
            make_transform(parent, child, values[:3], values[3:], stamp=_time(stamp_ns)), "bag")
    for parent, child, stamp_ns, values in transforms:
        ts = make_transform(parent, child, values[:3], values[3:], stamp=_time(stamp_ns))
        assert core.set_transform(ts, "bag")
    return core


def _assert_pose_equal(ts, values):
    tr, q = ts.transform.translation, ts.transform.rotation
    assert (tr.x, tr.y, tr.z) == pytest.approx(values[:3], abs=1e-9)
    got = np.array([q.x, q.y, q.z, q.w])
    # q and -q are the same rotation.
    assert abs(float(np.dot(got, values[3:]))) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("cls", [BufferCore, Buffer])
def test_odom_to_base_link_at_every_odom_stamp_equals_the_odom_pose(recording, cls):
    transforms, statics, odometry = recording
    core = _fill(cls(cache_time=200.0), transforms, statics)
    for stamp_ns, frame_id, child_frame_id, values in odometry:
        ts = core.lookup_transform(frame_id, child_frame_id, _time(stamp_ns))
        assert ts.header.frame_id == "odom" and ts.child_frame_id == "base_link"
        _assert_pose_equal(ts, values)


def test_batch_lookup_at_all_odom_stamps_equals_the_odom_poses(recording):
    transforms, statics, odometry = recording
    core = _fill(BufferCore(cache_time=200.0), transforms, statics)
    times = [_time(stamp_ns) for stamp_ns, *_ in odometry]
    matrices = core.lookup_transforms("odom", "base_link", times)
    expected = np.array([values[:3] for *_, values in odometry])
    assert np.allclose(matrices[:, :3, 3], expected, atol=1e-9)


def test_static_chain_reaches_the_camera_optical_frame_from_map(recording):
    transforms, statics, odometry = recording
    core = _fill(BufferCore(cache_time=200.0), transforms, statics)
    assert core.can_transform("map", "oakd_rgb_camera_optical_frame", 0)
    chain = core.chain("map", 0, "oakd_rgb_camera_optical_frame", 0, "map")
    assert chain[0] == "oakd_rgb_camera_optical_frame" and chain[-1] == "map"
    assert {"base_link", "odom", "shell_link"} <= set(chain)

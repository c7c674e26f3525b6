"""tf2py.bag.load: a bag's /tf and /tf_static in a Buffer that holds the whole recording."""

from __future__ import annotations

import numpy as np
import pytest

import tf2py
from bagdata import ALL_RECORDINGS, IDENTITY, NAV2, TF_EXAMPLE_ROS1, TF_EXAMPLE_ROS2, TURTLESIM, write_bag
from tf2py import ExtrapolationException, Time
from tf2py.bag import BagWarning, load, read_transforms
from tf2py.buffer.buffer import Buffer
from tf2py.buffer.core import BufferCore

FRAMES = {
    NAV2.name: {"map", "odom", "base_link", "left_wheel", "right_wheel", "base_footprint",
                "shell_link", "oakd_rgb_camera_optical_frame"},
    TF_EXAMPLE_ROS2.name: {"odom", "base_footprint", "base_link"},
    TF_EXAMPLE_ROS1.name: {"odom", "base_footprint", "base_link"},
    TURTLESIM.name: {"world", "turtle1", "turtle2", "carrot"},
}


def test_load_is_reachable_from_the_top_level_package():
    assert tf2py.bag.load is load


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.name)
def test_load_returns_a_buffer_with_every_frame_and_parent_of_the_bag(path):
    buffer = load(path)
    assert isinstance(buffer, Buffer)
    data = read_transforms(path)
    assert set(buffer.get_frames()) == set(data.transforms.parents) | set(data.transforms.children)
    assert FRAMES[path.name] <= set(buffer.get_frames())
    mid = Time.from_nanoseconds(int(np.median(data.transforms.stamps_ns[~data.is_static])))
    for parent, child in set(zip(data.transforms.parents, data.transforms.children)):
        assert buffer.get_parent(child, mid) == parent


def test_nav2_odom_to_base_link_at_every_odom_stamp_equals_the_odom_pose():
    from rosbags.highlevel import AnyReader

    buffer = load(NAV2)
    stamps, positions = [], []
    with AnyReader([NAV2]) as reader:
        odom = [c for c in reader.connections if c.topic == "/odom"]
        for connection, _, raw in reader.messages(connections=odom):
            msg = reader.deserialize(raw, connection.msgtype)
            stamps.append(Time(msg.header.stamp.sec, msg.header.stamp.nanosec))
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            positions.append((p.x, p.y, p.z, q.x, q.y, q.z, q.w))
    for stamp, values in zip(stamps, positions):
        ts = buffer.lookup_transform("odom", "base_link", stamp)
        tr, q = ts.transform.translation, ts.transform.rotation
        assert (tr.x, tr.y, tr.z) == pytest.approx(values[:3], abs=1e-9)
        assert abs(np.dot([q.x, q.y, q.z, q.w], values[3:])) == pytest.approx(1.0, abs=1e-9)


def test_cache_holds_the_whole_recording_by_default():
    data = read_transforms(TF_EXAMPLE_ROS2)
    assert data.recording_span_s() > 10.0  # longer than tf2's default cache
    buffer = load(TF_EXAMPLE_ROS2)
    first = Time.from_nanoseconds(int(data.transforms.stamps_ns[~data.is_static].min()))
    assert buffer.can_transform("odom", "base_link", first)


def test_cache_time_limits_what_the_buffer_keeps():
    data = read_transforms(TF_EXAMPLE_ROS2)
    buffer = load(TF_EXAMPLE_ROS2, cache_time=5.0)
    first = Time.from_nanoseconds(int(data.transforms.stamps_ns[~data.is_static].min()))
    with pytest.raises(ExtrapolationException):
        buffer.lookup_transform("odom", "base_footprint", first)
    assert buffer.can_transform("odom", "base_footprint", 0)


def test_tf_example_ros1_and_ros2_give_identical_buffers():
    ros1 = load(TF_EXAMPLE_ROS1)
    ros2 = load(TF_EXAMPLE_ROS2)
    assert ros1.get_frames() == ros2.get_frames()
    data = read_transforms(TF_EXAMPLE_ROS2)
    times = [Time.from_nanoseconds(int(s)) for s in data.transforms.stamps_ns[~data.is_static]]
    times += [Time.from_nanoseconds(int(a + b) // 2) for a, b in
              zip(data.transforms.stamps_ns[~data.is_static][:-1],
                  data.transforms.stamps_ns[~data.is_static][1:])]
    for target, source in [("odom", "base_link"), ("base_link", "odom"),
                           ("odom", "base_footprint")]:
        m1 = ros1.lookup_transforms(target, source, times)
        m2 = ros2.lookup_transforms(target, source, times)
        assert np.array_equal(m1, m2)
    yaml1 = ros1.all_frames_as_yaml().replace("bag:tf_example.bag", "bag:X")
    yaml2 = ros2.all_frames_as_yaml().replace("bag:tf_example", "bag:X")
    assert yaml1 == yaml2


def test_a_ros2_bags_metadata_file_names_its_folder():
    # as `ros2 bag info` takes either the folder or its metadata.yaml
    by_file, by_folder = load(TF_EXAMPLE_ROS2 / "metadata.yaml"), load(TF_EXAMPLE_ROS2)
    assert by_file.get_frames() == by_folder.get_frames()
    assert by_file.all_frames_as_yaml() == by_folder.all_frames_as_yaml()


@pytest.mark.parametrize("path", [TF_EXAMPLE_ROS2, TF_EXAMPLE_ROS1], ids=["ros2", "ros1"])
def test_tf_example_static_applies_before_the_first_dynamic_sample(path):
    data = read_transforms(path)
    buffer = load(path)
    first_ns = int(data.transforms.stamps_ns[~data.is_static].min())
    before = Time.from_nanoseconds(first_ns - 30_000_000_000)
    ts = buffer.lookup_transform("base_footprint", "base_link", before)
    assert ts.header.stamp == before
    # ... and it composes with the very first dynamic sample.
    assert buffer.can_transform("odom", "base_link", Time.from_nanoseconds(first_ns))


def test_turtlesim_legacy_tf_gives_world_to_carrot_through_turtle1():
    buffer = load(TURTLESIM)
    assert buffer.chain("world", 0, "carrot", 0, "world") == ["carrot", "turtle1", "world"]
    assert buffer.can_transform("turtle2", "carrot", 0)


def test_authority_names_the_bag_file():
    buffer = load(TF_EXAMPLE_ROS1)
    assert "bag:tf_example.bag" in buffer.all_frames_as_yaml()


def test_load_into_a_given_buffer_keeps_what_it_had():
    core = BufferCore(cache_time=300.0)
    core.set_transform_static(tf2py.make_transform("base_link", "laser"), "test")
    returned = load(TF_EXAMPLE_ROS1, buffer=core)
    assert returned is core
    assert core.can_transform("odom", "laser", 0)


def test_loading_a_damaged_bag_non_strictly_keeps_the_readable_part(tmp_path):
    from bagdata import write_mcap_raw
    from tf2py.bag.codec import encode_ros2

    good = [encode_ros2([("map", "odom", i * 1_000_000_000, IDENTITY)]) for i in range(1, 4)]
    path = write_mcap_raw(tmp_path / "damaged.mcap", "/tf", "tf2_msgs/msg/TFMessage",
                          good + [good[0][:30]])
    with pytest.warns(BagWarning, match="1 messages could not be decoded"):
        buffer = load(path, strict=False)
    assert buffer.can_transform("map", "odom", 2.5)


def test_transforms_older_than_a_given_buffers_window_are_counted(tmp_path):
    core = BufferCore(cache_time=1.0)
    core.set_transform(tf2py.make_transform("map", "odom", stamp=100.0), "test")
    path = write_bag(tmp_path / "old.mcap", [
        (False, 1, [("map", "odom", 10_000_000_000, IDENTITY)]),
        (False, 2, [("map", "odom", 200_000_000_000, IDENTITY)]),
    ])
    with pytest.warns(BagWarning, match="1 transforms older than the cache window"):
        load(path, buffer=core)


def test_a_bag_without_dynamic_transforms_loads_its_statics_with_a_warning():
    with pytest.warns(BagWarning, match=r"tf_example.bag: read 1 transforms in 1 messages; no "
                      r"transforms on /odom, only the 1 static ones on /tf_static"):
        buffer = load(TF_EXAMPLE_ROS1, tf_topic="/odom")
    assert buffer.get_frames() == ["base_footprint", "base_link"]

"""tf2py.bag.read_transforms on the shared real recordings (see their README), checked against
the README's description and against rosbags' own generic deserialiser."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from bagdata import ALL_RECORDINGS, NAV2, TF_EXAMPLE_ROS1, TF_EXAMPLE_ROS2, TURTLESIM
from tf2py.bag import read_transforms

NAV2_STATIC_CHILDREN = {
    "base_footprint", "bump_front_center", "bump_front_left", "bump_front_right", "bump_left",
    "bump_right", "bumper", "front_caster_link", "front_left_bottom_weight_block",
    "front_left_top_weight_block", "front_right_bottom_weight_block",
    "front_right_top_weight_block", "imu_link", "shell_link", "oakd_link", "oakd_imu_frame",
    "oakd_left_camera_frame", "oakd_left_camera_optical_frame", "oakd_rgb_camera_frame",
    "oakd_rgb_camera_optical_frame", "oakd_right_camera_frame",
    "oakd_right_camera_optical_frame", "front_left_tower_standoff",
    "front_right_tower_standoff", "rear_left_tower_standoff", "rear_right_tower_standoff",
    "oakd_camera_bracket", "rplidar_link", "tower_sensor_plate",
}


def edges(data, static):
    """{(parent, child)} of the static or dynamic rows."""
    return {
        (data.transforms.parents[i], data.transforms.children[i])
        for i in range(len(data))
        if bool(data.is_static[i]) == static
    }


def rate_hz(data, parent, child):
    rows = [i for i in range(len(data))
            if (data.transforms.parents[i], data.transforms.children[i]) == (parent, child)]
    stamps = np.sort(data.transforms.stamps_ns[rows])
    return (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9)


def test_nav2_dynamic_edges_are_map_odom_base_link_and_two_wheels():
    data = read_transforms(NAV2)
    assert edges(data, static=False) == {
        ("map", "odom"),
        ("odom", "base_link"),
        ("base_link", "left_wheel"),
        ("base_link", "right_wheel"),
    }


def test_nav2_has_29_static_edges_down_to_the_camera_optical_frames():
    data = read_transforms(NAV2)
    static = edges(data, static=True)
    assert len(static) == 29
    assert {child for _, child in static} == NAV2_STATIC_CHILDREN
    assert ("oakd_rgb_camera_frame", "oakd_rgb_camera_optical_frame") in static


def test_nav2_rates_match_the_readme():
    data = read_transforms(NAV2)
    assert rate_hz(data, "map", "odom") == pytest.approx(9.5, rel=0.15)
    assert rate_hz(data, "odom", "base_link") == pytest.approx(27, rel=0.15)


@pytest.mark.parametrize("path", [TF_EXAMPLE_ROS2, TF_EXAMPLE_ROS1], ids=["ros2", "ros1"])
def test_tf_example_has_odom_base_footprint_at_10_hz_and_one_static(path):
    data = read_transforms(path)
    assert edges(data, static=False) == {("odom", "base_footprint")}
    assert edges(data, static=True) == {("base_footprint", "base_link")}
    assert rate_hz(data, "odom", "base_footprint") == pytest.approx(10, rel=0.15)


@pytest.mark.parametrize("path", [TF_EXAMPLE_ROS2, TF_EXAMPLE_ROS1], ids=["ros2", "ros1"])
def test_tf_example_static_is_stamped_before_the_first_dynamic_sample(path):
    data = read_transforms(path)
    static_stamp = data.transforms.stamps_ns[data.is_static].max()
    assert static_stamp < data.transforms.stamps_ns[~data.is_static].min()


def test_tf_example_ros1_and_ros2_give_identical_transforms():
    ros1 = read_transforms(TF_EXAMPLE_ROS1)
    ros2 = read_transforms(TF_EXAMPLE_ROS2)
    assert ros1.transforms.parents == ros2.transforms.parents
    assert ros1.transforms.children == ros2.transforms.children
    assert np.array_equal(ros1.transforms.stamps_ns, ros2.transforms.stamps_ns)
    assert np.array_equal(ros1.transforms.values.view(np.int64), ros2.transforms.values.view(np.int64))
    assert np.array_equal(ros1.is_static, ros2.is_static)


def test_tf_example_sqlite_file_alone_reads_like_its_folder():
    folder = read_transforms(TF_EXAMPLE_ROS2)
    single = read_transforms(TF_EXAMPLE_ROS2 / "tf_example.db3")
    assert single.transforms.parents == folder.transforms.parents
    assert np.array_equal(single.transforms.values, folder.transforms.values)


def test_turtlesim_legacy_tf_messages_give_two_turtles_and_a_static_carrot():
    data = read_transforms(TURTLESIM)
    assert data.topics == {"/tf": "tf/msg/tfMessage", "/tf_static": "tf2_msgs/msg/TFMessage"}
    assert edges(data, static=False) == {("world", "turtle1"), ("world", "turtle2")}
    assert edges(data, static=True) == {("turtle1", "carrot")}
    assert rate_hz(data, "world", "turtle1") == pytest.approx(62, rel=0.15)
    assert rate_hz(data, "world", "turtle2") == pytest.approx(62, rel=0.15)


@pytest.mark.parametrize("path", ALL_RECORDINGS, ids=lambda p: p.name)
def test_every_transform_matches_rosbags_generic_deserialiser(path):
    """The hand-written codec against rosbags' own decoding of every message."""
    from rosbags.highlevel import AnyReader

    data = read_transforms(path)
    expected = []
    with AnyReader([path]) as reader:
        connections = [c for c in reader.connections if c.topic in ("/tf", "/tf_static")]
        for connection, log_ns, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, connection.msgtype)
            for t in msg.transforms:
                tr, q = t.transform.translation, t.transform.rotation
                expected.append(
                    (
                        log_ns,
                        connection.topic == "/tf_static",
                        t.header.frame_id,
                        t.child_frame_id,
                        t.header.stamp.sec * 1_000_000_000 + t.header.stamp.nanosec,
                        (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w),
                    )
                )
    log_of_row = np.repeat(data.message_log_ns, np.diff(data.message_offsets))
    got = [
        (
            int(log_of_row[i]),
            bool(data.is_static[i]),
            data.transforms.parents[i],
            data.transforms.children[i],
            int(data.transforms.stamps_ns[i]),
            tuple(data.transforms.values[i].tolist()),
        )
        for i in range(len(data))
    ]
    assert Counter(got) == Counter(expected)
    assert len(got) == len(expected) > 0


def test_messages_are_in_log_time_order():
    data = read_transforms(TURTLESIM)
    assert np.all(np.diff(data.message_log_ns) >= 0)
    assert data.message_offsets[-1] == len(data)


def test_custom_topic_names_are_read():
    data = read_transforms(NAV2, tf_topic="/tf_static", tf_static_topic="/nothing_here")
    assert len(edges(data, static=False)) == 29
    assert not data.is_static.any()


@pytest.mark.parametrize("storage", ["SQLITE3", "MCAP"])
def test_ros2_bag_folder_with_either_storage_is_read(tmp_path, storage):
    """Folders as rosbag2 writes them (metadata.yaml + .db3 or .mcap), made with rosbags."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from tf2py.bag.codec import encode_ros2

    typestore = get_typestore(Stores.ROS2_HUMBLE)
    folder = tmp_path / f"bag_{storage.lower()}"
    rows = [("odom", "base_link", 1_000_000_000 + i * 50_000_000, (i, 0.5, -1.0, 0, 0, 0, 1))
            for i in range(20)]
    with Writer(folder, version=8, storage_plugin=StoragePlugin[storage]) as writer:
        tf = writer.add_connection("/tf", "tf2_msgs/msg/TFMessage", typestore=typestore)
        static = writer.add_connection("/tf_static", "tf2_msgs/msg/TFMessage",
                                       typestore=typestore)
        writer.write(static, 5, encode_ros2([("base_link", "laser", 0, (0, 0, 1, 0, 0, 0, 1))]))
        for i, r in enumerate(rows):
            writer.write(tf, 10 + i, encode_ros2([r]))
    data = read_transforms(folder)
    assert edges(data, static=True) == {("base_link", "laser")}
    assert data.transforms.stamps_ns[~data.is_static].tolist() == [r[2] for r in rows]
    assert data.transforms.values[~data.is_static][:, 0].tolist() == list(range(20))


def test_big_endian_cdr_is_decoded():
    import struct

    from tf2py.bag.codec import RowBuilder, decode_ros2

    def string(s, offset):
        b = s.encode() + b"\x00"
        return struct.pack(">I", len(b)) + b

    body = struct.pack(">I", 1) + struct.pack(">iI", 7, 8)
    body += string("map", 0)
    body += b"\x00" * (-len(body) & 3)
    body += string("odom", 0)
    body += b"\x00" * (-len(body) & 7)
    body += struct.pack(">7d", 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0)
    out = RowBuilder()
    assert decode_ros2(b"\x00\x00\x00\x00" + body, out) == 1
    assert (out.parents, out.children, list(out.stamps)) == (["map"], ["odom"], [7_000_000_008])
    assert list(out.values) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]


def test_one_transform_messages_decode_the_same_through_the_layout_cache():
    from tf2py.bag.codec import RowBuilder, decode_ros2, encode_ros2

    out = RowBuilder()
    first = encode_ros2([("map", "odom", 5, (1, 2, 3, 0, 0, 0, 1))])
    second = encode_ros2([("map", "odom", 6, (4, 5, 6, 0, 0, 1, 0))])
    other = encode_ros2([("map", "odo", 7, (7, 8, 9, 0, 1, 0, 0))])  # same size, other frame
    for raw in (first, second, other):
        decode_ros2(raw, out)
    assert out.children == ["odom", "odom", "odo"]
    assert list(out.stamps) == [5, 6, 7]
    assert list(out.values[7:14]) == [4, 5, 6, 0, 0, 1, 0]

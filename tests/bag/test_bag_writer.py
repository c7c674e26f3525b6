"""BagWriter: a ROS 2 MCAP that tf2py, rosbags and mcap-ros2-support read back bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from bagdata import IDENTITY, write_bag
from tf2py import make_transform
from tf2py.bag import BagError, BagWriter, read_transforms

SPECIAL = [0.0, -0.0, 1e-300, 5e-324, -1.7976931348623157e308, 0.1 + 0.2, np.pi, -1e-17]


def random_rows(n, seed=7):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        values = rng.normal(size=7) * 10.0 ** rng.integers(-8, 8, size=7)
        values[i % 7] = SPECIAL[i % len(SPECIAL)]
        stamp = int(rng.integers(0, 2**31 - 1)) * 1_000_000_000 + int(rng.integers(0, 10**9))
        rows.append((f"parent_{i % 5}", f"child_{i}", stamp, tuple(values.tolist())))
    return rows


def test_written_transforms_read_back_bit_for_bit(tmp_path):
    rows = random_rows(300)
    path = write_bag(tmp_path / "bits.mcap", [
        (i % 4 == 0, 1_000 + i, rows[3 * i : 3 * i + 3]) for i in range(100)
    ])
    data = read_transforms(path)
    assert data.transforms.parents == [r[0] for r in rows]
    assert data.transforms.children == [r[1] for r in rows]
    assert data.transforms.stamps_ns.tolist() == [r[2] for r in rows]
    expected = np.array([r[3] for r in rows], dtype=np.float64)
    assert np.array_equal(data.transforms.values.view(np.uint64), expected.view(np.uint64))
    assert data.message_log_ns.tolist() == [1_000 + i for i in range(100)]
    assert data.message_static.tolist() == [i % 4 == 0 for i in range(100)]


def test_transform_stamped_objects_are_written_with_their_stamps(tmp_path):
    path = tmp_path / "objects.mcap"
    sent = make_transform("map", "odom", (1.5, -2.0, 0.25), (0.0, 0.0, 0.6, 0.8),
                          stamp=1_700_000_000.123456789)
    with BagWriter(path) as writer:
        writer.write([sent], log_ns=5)
    data = read_transforms(path)
    assert data.transform(0) == sent


def test_mcap_ros2_support_decodes_the_file_as_tf2_msgs(tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    rows = random_rows(20)
    path = write_bag(tmp_path / "ros2.mcap", [(False, 10, rows[:10]), (True, 20, rows[10:])])
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        decoded = list(reader.iter_decoded_messages())
    assert [channel.topic for _, channel, _, _ in decoded] == ["/tf", "/tf_static"]
    got = []
    for schema, channel, _, ros_msg in decoded:
        assert schema.name == "tf2_msgs/msg/TFMessage"
        assert schema.encoding == "ros2msg"
        assert channel.message_encoding == "cdr"
        for t in ros_msg.transforms:
            tr, q = t.transform.translation, t.transform.rotation
            got.append((t.header.frame_id, t.child_frame_id,
                        t.header.stamp.sec * 1_000_000_000 + t.header.stamp.nanosec,
                        (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w)))
    assert got == rows


def test_rosbags_reads_the_file_with_the_static_topic_transient_local(tmp_path):
    from rosbags.highlevel import AnyReader

    path = write_bag(tmp_path / "qos.mcap", [(True, 10, [("a", "b", 1, IDENTITY)]),
                                            (False, 20, [("b", "c", 2, IDENTITY)])])
    with AnyReader([path]) as reader:
        by_topic = {c.topic: c for c in reader.connections}
        assert by_topic["/tf"].msgtype == "tf2_msgs/msg/TFMessage"
        qos = by_topic["/tf_static"].ext.offered_qos_profiles[0]
        assert qos.durability.name == "TRANSIENT_LOCAL"
        messages = [reader.deserialize(raw, c.msgtype)
                    for c, _, raw in reader.messages()]
    assert [m.transforms[0].child_frame_id for m in messages] == ["b", "c"]


def test_file_header_says_ros2_profile(tmp_path):
    from mcap.reader import make_reader

    path = write_bag(tmp_path / "profile.mcap", [(False, 1, [("a", "b", 1, IDENTITY)])])
    with open(path, "rb") as f:
        reader = make_reader(f)
        assert reader.get_header().profile == "ros2"
        assert reader.get_summary().statistics.message_count == 1


def test_write_after_close_is_a_bag_error(tmp_path):
    writer = BagWriter(tmp_path / "closed.mcap")
    writer.close()
    writer.close()  # closing twice is harmless
    with pytest.raises(BagError, match="closed"):
        writer.write_rows([("a", "b", 1, IDENTITY)])


def test_writer_into_a_missing_folder_is_a_bag_error(tmp_path):
    with pytest.raises(BagError, match="cannot create"):
        BagWriter(tmp_path / "no" / "such" / "dir" / "x.mcap")

"""``tf2py record --foxglove``: the same recording also as ``foxglove.FrameTransforms``
(protobuf) on /tf_foxglove and /tf_static_foxglove, read back with the ``mcap`` package and
decoded with Foxglove's published protobuf schemas; the ROS topics stay readable."""

from __future__ import annotations

import subprocess

import pytest

from helpers import wait_for

pytest.importorskip("foxglove")

from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
from google.protobuf import descriptor_pb2

import tf2py.bag
from tf2py import Time, make_transform
from tf2py.bag import read_transforms
from tf2py.transport.broadcaster import (
    StaticTransformBroadcaster,
    TransformBroadcaster,
)
from tf2py.transport.zmq.core import Core


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c.address


def _foxglove_messages(path):
    from mcap.reader import make_reader

    out = {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages():
            out.setdefault(channel.topic, []).append((schema, channel, message))
    return out


def _values(t):
    return (t.parent_frame_id, t.child_frame_id,
            t.timestamp.seconds * 1_000_000_000 + t.timestamp.nanos,
            (t.translation.x, t.translation.y, t.translation.z,
             t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w))


def test_record_foxglove_writes_frame_transforms_matching_the_ros_topics(
        spawn, tf2py_command, core, tmp_path):
    out = tmp_path / "tree.mcap"
    static = make_transform("base_link", "camera", (0.1, 0.0, 0.25), (0.5, 0.5, 0.5, 0.5),
                            stamp=Time(7, 11))
    with StaticTransformBroadcaster(core=core) as statics, \
            TransformBroadcaster(core=core) as broadcaster:
        statics.send_transform(static)
        proc = spawn([*tf2py_command, "record", str(out), "--foxglove", "--core", core])
        proc.wait_for_line("tf2py record: recording to", timeout=30)
        sent = []

        def send_some():
            i = len(sent)
            batch = [make_transform("map", "odom", (i * 0.5, -1.0, 0.0), (0, 0, 0.6, 0.8),
                                    stamp=Time(1_700_000_000, i)),
                     make_transform("odom", "base_link", (0.0, i * 0.25, 0.0),
                                    stamp=Time(1_700_000_000, i))]
            broadcaster.send_transform(batch)
            sent.append(batch)
            return len(sent) >= 200

        wait_for(send_some, timeout=30, interval=0.005)
        assert proc.stop() == 0, proc.output()
    topics = _foxglove_messages(out)
    assert {"/tf", "/tf_static", "/tf_foxglove", "/tf_static_foxglove"} <= set(topics)
    schema, channel, _ = topics["/tf_foxglove"][0]
    assert (schema.name, schema.encoding, channel.message_encoding) == (
        "foxglove.FrameTransforms", "protobuf", "protobuf")
    files = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
    assert "foxglove/FrameTransforms.proto" in {f.name for f in files.file}

    # Each /tf message has its FrameTransforms twin with the same log time and values.
    ros = read_transforms(out)
    for topic, is_static in (("/tf_foxglove", False), ("/tf_static_foxglove", True)):
        foxglove = sorted(
            (m.log_time, [_values(t) for t in FrameTransforms.FromString(m.data).transforms])
            for _, _, m in topics[topic])
        expected = []
        for k in range(ros.message_count):
            if bool(ros.message_static[k]) != is_static:
                continue
            rows = range(int(ros.message_offsets[k]), int(ros.message_offsets[k + 1]))
            expected.append((int(ros.message_log_ns[k]), [
                (ros.transforms.parents[i], ros.transforms.children[i], int(ros.transforms.stamps_ns[i]),
                 tuple(ros.transforms.values[i].tolist())) for i in rows]))
        assert foxglove == sorted(expected)
    statics_fox = [_values(t) for _, _, m in topics["/tf_static_foxglove"]
                   for t in FrameTransforms.FromString(m.data).transforms]
    assert ("base_link", "camera", 7_000_000_011, (0.1, 0.0, 0.25, 0.5, 0.5, 0.5, 0.5)) \
        in statics_fox
    assert len(topics["/tf_foxglove"]) > 20
    # The ROS side still loads and answers, the extra topics ignored.
    buffer = tf2py.bag.load(out)
    assert buffer.can_transform("map", "camera", 0)


def test_record_foxglove_without_the_viz_extra_fails_before_creating_the_file(
        tf2py_command, core, tmp_path):
    fake = tmp_path / "fake" / "foxglove"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named foxglove')\n")
    out = tmp_path / "x.mcap"
    result = subprocess.run([*tf2py_command, "record", str(out), "--foxglove", "--core", core],
                            capture_output=True, text=True, timeout=60,
                            env={"PYTHONPATH": str(tmp_path / "fake")},
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "tf2py record: error: the Foxglove view needs the optional library 'foxglove-sdk': "
        "pip install 'tf2py[viz]'")
    assert not out.exists()

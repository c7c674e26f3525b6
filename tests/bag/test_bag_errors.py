"""Broken input gives a one-line BagError (or a BagWarning with counts), never a traceback and
never a half-filled buffer."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import tf2py.bag
from bagdata import IDENTITY, NAV2, TF_EXAMPLE_ROS1, write_bag, write_mcap_raw
from tf2py.bag import BagDependencyError, BagError, BagWarning, load, read_transforms
from tf2py.bag.codec import encode_ros2


class RecordingBuffer:
    """Stands in for a buffer: records every batch insert it is given."""

    def __init__(self):
        self.calls = []

    def set_transforms(self, parents, children, stamps_ns, values, authority, is_static=False):
        self.calls.append((list(parents), is_static))
        from types import SimpleNamespace

        return SimpleNamespace(stored=len(parents), old=0, invalid=[])


def assert_one_line(exc_info, *fragments):
    text = str(exc_info.value)
    assert "\n" not in text
    for fragment in fragments:
        assert fragment in text


def test_missing_path_is_a_bag_error(tmp_path):
    with pytest.raises(BagError) as exc:
        read_transforms(tmp_path / "nope.mcap")
    assert_one_line(exc, "nope.mcap", "no such file")


def test_empty_file_is_a_bag_error(tmp_path):
    path = tmp_path / "empty.mcap"
    path.write_bytes(b"")
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "empty.mcap", "empty file")


def test_file_that_is_no_bag_format_is_a_bag_error(tmp_path):
    path = tmp_path / "notes.bag"
    path.write_text("these are not the transforms you are looking for\n" * 20)
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "notes.bag", "not a ROS bag")


def test_folder_without_metadata_is_a_bag_error(tmp_path):
    with pytest.raises(BagError) as exc:
        read_transforms(tmp_path)
    assert_one_line(exc, "metadata.yaml")


@pytest.mark.parametrize("keep", [0.5, 0.99], ids=["half", "all-but-footer"])
def test_truncated_mcap_is_a_bag_error(tmp_path, keep):
    data = NAV2.read_bytes()
    path = tmp_path / "cut.mcap"
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "cut.mcap", "truncated")


def test_truncated_ros1_bag_is_a_bag_error(tmp_path):
    data = TF_EXAMPLE_ROS1.read_bytes()
    path = tmp_path / "cut.bag"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "cut.bag", "truncated")


def test_corrupt_chunk_in_the_middle_is_a_bag_error(tmp_path):
    data = bytearray(NAV2.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 2000] = b"\xff" * 2000
    path = tmp_path / "corrupt.mcap"
    path.write_bytes(bytes(data))
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "corrupt.mcap", "corrupt")


def test_bag_without_tf_topics_names_the_topics_it_has(tmp_path):
    path = write_mcap_raw(tmp_path / "chatter.mcap", "/chatter", "std_msgs/msg/String",
                          [b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00"], "string data\n")
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "no /tf or /tf_static topic", "/chatter")


def test_tf_topic_with_a_non_transform_type_is_a_bag_error(tmp_path):
    path = write_mcap_raw(tmp_path / "wrong.mcap", "/tf", "std_msgs/msg/String",
                          [b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00"], "string data\n")
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "/tf", "std_msgs/msg/String", "not a transform message")


def test_bag_whose_tf_topics_hold_no_message_is_a_bag_error(tmp_path):
    path = write_bag(tmp_path / "silent.mcap", [])
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "no transforms")


def good_and_garbled(tmp_path):
    good = encode_ros2([("a", "b", 5, IDENTITY)])
    garbled = good[:-9]  # cut inside the rotation
    return write_mcap_raw(tmp_path / "garbled.mcap", "/tf", "tf2_msgs/msg/TFMessage",
                          [good, garbled, good[:12], good])


def test_undecodable_message_is_a_bag_error_when_strict(tmp_path):
    path = good_and_garbled(tmp_path)
    with pytest.raises(BagError) as exc:
        read_transforms(path)
    assert_one_line(exc, "2 messages could not be decoded")


def test_undecodable_message_is_skipped_with_a_counting_warning_when_not_strict(tmp_path):
    path = good_and_garbled(tmp_path)
    with pytest.warns(BagWarning, match="read 2 transforms in 2 messages; 2 messages could not"):
        data = read_transforms(path, strict=False)
    assert len(data) == 2
    assert data.skipped_messages == 2


def test_corrupt_bag_leaves_a_given_buffer_untouched(tmp_path):
    good = encode_ros2([("a", "b", 5, IDENTITY)])
    path = write_mcap_raw(tmp_path / "late.mcap", "/tf", "tf2_msgs/msg/TFMessage",
                          [good] * 50 + [good[:20]])
    buffer = RecordingBuffer()
    with pytest.raises(BagError):
        load(path, buffer=buffer)
    assert buffer.calls == []


def test_load_rejects_a_buffer_together_with_a_cache_time():
    with pytest.raises(ValueError, match="either buffer or cache_time"):
        load(NAV2, buffer=RecordingBuffer(), cache_time=5.0)


def test_load_inserts_statics_and_dynamics_in_one_batch_each():
    buffer = RecordingBuffer()
    load(TF_EXAMPLE_ROS1, buffer=buffer)
    assert [(len(parents), static) for parents, static in buffer.calls] == [
        (1, True),
        (517, False),
    ]


def test_invalid_transforms_in_a_bag_are_skipped_with_a_counting_warning(tmp_path):
    from tf2py.buffer.core import BufferCore

    nan = (float("nan"), 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    path = write_bag(tmp_path / "nan.mcap", [
        (False, 1, [("map", "odom", 1_000_000_000, IDENTITY)]),
        (False, 2, [("map", "odom", 2_000_000_000, nan), ("odom", "odom", 2_000_000_000, IDENTITY)]),
        (False, 3, [("map", "odom", 3_000_000_000, IDENTITY)]),
    ])
    core = BufferCore(cache_time=100.0)
    with pytest.warns(BagWarning, match=r"loaded 2 of 4 transforms; 2 invalid transforms skipped"):
        load(path, buffer=core)
    assert core.can_transform("map", "odom", 1.5)


def test_missing_reader_library_gives_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "rosbags.rosbag2", None)
    with pytest.raises(BagDependencyError) as exc:
        read_transforms(NAV2)
    assert_one_line(exc, "pip install 'tf2py[bag]'", "rosbags")
    assert isinstance(exc.value, ImportError)


def test_missing_writer_library_gives_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mcap.writer", None)
    with pytest.raises(BagDependencyError) as exc:
        tf2py.bag.BagWriter(tmp_path / "out.mcap")
    assert_one_line(exc, "pip install 'tf2py[bag]'", "mcap")
    assert not (tmp_path / "out.mcap").exists()


def test_play_command_reports_a_broken_bag_in_one_line(tmp_path, tf2py_command):
    path = tmp_path / "empty.mcap"
    path.write_bytes(b"")
    result = subprocess.run([*tf2py_command, "play", str(path)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == f"tf2py play: error: {path}: empty file, not a bag"
    assert "Traceback" not in result.stderr + result.stdout


def test_warnings_name_the_file(tmp_path):
    path = good_and_garbled(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read_transforms(path, strict=False)
    assert any("garbled.mcap" in str(w.message) for w in caught)


def test_truncated_mcap_is_recovered_up_to_the_damage_when_not_strict(tmp_path):
    import numpy as np

    whole = tmp_path / "whole.mcap"
    noise = np.random.default_rng(1).normal(size=(20_000, 7)).tolist()  # incompressible
    with tf2py.bag.BagWriter(whole) as writer:  # 256 kB chunks: several of them
        for i in range(20_000):
            writer.write_rows([("map", "odom", (i + 1) * 10_000_000, noise[i])], log_ns=i + 1)
    data = whole.read_bytes()
    cut = tmp_path / "killed.mcap"
    cut.write_bytes(data[: int(len(data) * 0.5)])
    with pytest.raises(BagError, match="truncated"):
        read_transforms(cut)
    with pytest.warns(BagWarning, match="reading stopped after"):
        recovered = read_transforms(cut, strict=False)
    complete = read_transforms(whole)
    n = len(recovered)
    assert 0 < n < len(complete)
    assert recovered.transforms.stamps_ns.tolist() == complete.transforms.stamps_ns[:n].tolist()


def test_real_mcap_without_its_summary_is_recovered_whole_when_not_strict(tmp_path):
    data = NAV2.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) * 3 // 4])  # its one data chunk is intact
    with pytest.warns(BagWarning, match="corrupt or truncated"):
        recovered = read_transforms(cut, strict=False)
    complete = read_transforms(NAV2)
    assert recovered.transforms.stamps_ns.tolist() == complete.transforms.stamps_ns.tolist()


def test_real_mcap_cut_inside_its_only_chunk_is_a_bag_error_even_when_not_strict(tmp_path):
    data = NAV2.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(BagError, match="corrupt or truncated"):
        read_transforms(cut, strict=False)

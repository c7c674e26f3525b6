"""Bags are recognised by content, whatever they are called; a FIFO is refused at once;
``record`` output under any name loads and plays; ``play --lenient`` plays a cut recording."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from helpers import SHARED_DATA
from tf2py import make_transform
from tf2py.bag import BagError, load, read_transforms
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.zmq.core import Core

MCAP = SHARED_DATA / "nav2_turtlebot.mcap"
ROS1 = SHARED_DATA / "tf_example.bag"
SQLITE = SHARED_DATA / "tf_example" / "tf_example.db3"


@pytest.mark.parametrize("source, name", [
    (MCAP, "run1"), (MCAP, "out.bag"), (MCAP, "robot.db3"),
    (ROS1, "old.mcap"), (ROS1, "noext"),
    (SQLITE, "store.mcap"), (SQLITE, "store"),
])
def test_bag_is_recognised_by_content_whatever_its_name(tmp_path, source, name):
    copy = tmp_path / name
    shutil.copyfile(source, copy)
    expected = read_transforms(source)
    got = read_transforms(copy)
    assert len(got) == len(expected) > 0
    assert got.transforms.children == expected.transforms.children
    assert load(copy).get_frames() == load(source).get_frames()


def _fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_fifo_given_as_a_bag_is_refused_at_once(tmp_path):
    started = time.monotonic()
    with pytest.raises(BagError, match="not a regular file or a bag folder"):
        load(_fifo(tmp_path))
    assert time.monotonic() - started < 5.0  # refused, not blocked on open()


def test_play_of_a_fifo_is_a_one_line_error(tmp_path, tf2py_command):
    done = subprocess.run([*tf2py_command, "play", str(_fifo(tmp_path))], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a regular file or a bag folder" in lines[0]


@pytest.mark.parametrize("name", ["run1", "out.bag"])
def test_record_under_any_name_then_load_and_play(spawn, tf2py_command, tmp_path, name):
    out = tmp_path / name
    with Core("tcp://127.0.0.1:0") as core, \
            StaticTransformBroadcaster(core=core.address) as statics, \
            TransformBroadcaster(core=core.address) as broadcaster:
        statics.send_transform(make_transform("base_link", "laser", (0.1, 0, 0)))
        proc = spawn([*tf2py_command, "record", str(out), "--core", core.address])
        proc.wait_for_line("tf2py record: recording to", timeout=30)
        for k in range(1, 400):
            broadcaster.send_transform(make_transform("map", "base_link", (k, 0, 0),
                                                      stamp=100 + k * 0.01))
            time.sleep(0.002)
        assert proc.stop() == 0
    buffer = load(out)
    assert {"map", "base_link", "laser"} <= set(buffer.get_frames())
    assert buffer.can_transform("map", "laser", 0)
    with Core("tcp://127.0.0.1:0") as core:
        done = subprocess.run([*tf2py_command, "play", str(out), "--rate", "100",
                               "--core", core.address, "--quiet"],
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "tf2py play: done" in done.stdout


def test_play_of_a_cut_recording_points_at_lenient_and_lenient_plays_it(tmp_path,
                                                                        tf2py_command):
    cut = tmp_path / "cut.mcap"
    data = MCAP.read_bytes()
    cut.write_bytes(data[: len(data) * 9 // 10])  # the end (summary, footer) missing
    refused = subprocess.run([*tf2py_command, "play", str(cut), "--core",
                              "tcp://127.0.0.1:1"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode == 1
    assert "--lenient" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    with Core("tcp://127.0.0.1:0") as core:
        played = subprocess.run([*tf2py_command, "play", str(cut), "--lenient", "--rate",
                                 "1000", "--quiet", "--core", core.address],
                                capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL)
    assert played.returncode == 0, played.stderr
    assert "tf2py play: done, sent" in played.stdout
    assert int(played.stdout.split("sent ")[1].split()[0]) > 0

"""One rule for a leading '/' on every broadcaster (tf2's): ids travel as their sender wrote
them, a listener stores them without it and counts them per sender, a static set (the
broadcaster's and the core's latch) holds '/a' and 'a' as one frame, and `tf2py doctor`, even
started after the static was sent, names who sends them."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import wait_for
from tf2py import Buffer, Time, make_transform
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.frame_ids import leading_slashes
from tf2py.transport.listener import TransformListener, TransformSubscriber
from transport_support import core  # noqa: F401  (fixture)


def test_leading_slashes_are_counted_in_batches_of_any_size():
    assert leading_slashes(["map"], ["odom"]) == 0
    assert leading_slashes(["/map"], ["/odom"]) == 2
    assert leading_slashes(["map", "a/b", "c"], ["x", "y", "z"]) == 0  # '/' inside an id
    assert leading_slashes(["map", "/a", "c"], ["x", "y", "/z"]) == 2


def test_a_dynamic_and_a_static_sender_are_stored_without_it_and_counted_per_sender(core):  # noqa: F811
    buffer = Buffer()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address, authority="driver") as dynamic, \
            StaticTransformBroadcaster(core.address, authority="mounts") as static:
        static.send_transform(make_transform("/base_link", "/laser", (0.2, 0, 0)))

        def stored():
            dynamic.send_transform(make_transform("/odom", "base_link", stamp=Time(5)))
            return buffer.can_transform("odom", "laser", Time())

        wait_for(stored, timeout=10, interval=0.02)
        counts = listener.stats()["leading_slash"]
    # Two ids with '/' in every copy of the set heard: the live message, the core's replay of
    # its latch to a listener that joined around it, the broadcaster's resend when its link
    # to the core comes up: how many copies depends on timing, each counts both ids.
    assert counts["mounts"] >= 2 and counts["mounts"] % 2 == 0, counts
    assert counts["driver"] >= 1
    assert buffer.get_frames() == ["base_link", "laser", "odom"]


def test_the_latched_set_keeps_ids_as_sent_and_holds_one_row_per_frame(core):  # noqa: F811
    def late_joiners_static_batch():
        # A late joiner: what it gets is the core's latch, not the live message.
        heard = []
        with TransformSubscriber(core.address, on_batch=heard.append):
            wait_for(lambda: any(b.is_static for b in heard), timeout=10)
        return [b for b in heard if b.is_static][0]

    with StaticTransformBroadcaster(core.address, authority="mounts") as static:
        static.send_transform(make_transform("base_link", "laser", (0.1, 0, 0)))
        static.send_transform(make_transform("/base_link", "/laser", (0.2, 0, 0)))
        # The first set alone may be latched for a moment: wait for the second to replace it.
        batches = []
        wait_for(lambda: batches.append(late_joiners_static_batch())
                 or batches[-1].transforms.values[0][0] == 0.2, timeout=20)
    batch = batches[-1]
    assert batch.authority == "mounts"
    assert list(zip(batch.transforms.parents, batch.transforms.children)) == [("/base_link", "/laser")]


def test_doctor_started_after_the_static_names_its_sender(core):  # noqa: F811
    with StaticTransformBroadcaster(core.address, authority="old_driver") as static:
        static.send_transform(make_transform("/base_link", "laser_mount"))
        wait_for(lambda: "laser_mount" in core.latched_frames(), timeout=10)
        result = subprocess.run(
            [sys.executable, "-m", "tf2py.cli.main", "doctor", "--core", core.address,
             "--duration", "1", "--json"], capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL)
    report = json.loads(result.stdout)
    (finding,) = [f for f in report["findings"] if f["check"] == "leading_slash"]
    assert finding["authorities"] == ["old_driver"]
    assert finding["frames"] == ["/base_link"]

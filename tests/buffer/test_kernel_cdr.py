"""The kernel's TFMessage CDR codec (_kernel/cdr.hpp, py_cdr.hpp): decoded to columns, and a
round of samples straight into the batch insert, with FrameIds prefixing a robot's frames."""

from __future__ import annotations

import functools
import math
import struct
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py import Buffer, BufferCore, Time
from tf2py.buffer._kernel_ext import CDR_UNKNOWN_FRAMES, decode_tf_cdr
from tf2py.buffer.batch import FrameIds, insert_cdr
from tf2py.server.fleet.names import prefix_frame
from tf2py.transport.ros2 import cdr

IDENTITY = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
STATUS, COUNT, WHERE, STORED, OLD, INVALID, FIRST_INVALID, CODE, FIRST_STAMP = range(9)


def _sample(parents, children, stamps=None, values=None):
    n = len(parents)
    stamps = [5_000_000_000 + k for k in range(n)] if stamps is None else stamps
    if values is None:
        values = np.tile(IDENTITY, (n, 1))
        values[:, 0] = np.arange(n)
    return cdr.encode_tf_columns(parents, children, stamps, values)


@functools.lru_cache(maxsize=1)
def _rosbags():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)


def _rosbags_message(store, rows):
    types = store.types
    transforms = []
    for parent, child, (sec, nanosec), v in rows:
        header = types["std_msgs/msg/Header"](
            stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=parent)
        transform = types["geometry_msgs/msg/Transform"](
            translation=types["geometry_msgs/msg/Vector3"](x=v[0], y=v[1], z=v[2]),
            rotation=types["geometry_msgs/msg/Quaternion"](x=v[3], y=v[4], z=v[5], w=v[6]))
        transforms.append(types["geometry_msgs/msg/TransformStamped"](
            header=header, child_frame_id=child, transform=transform))
    return types["tf2_msgs/msg/TFMessage"](transforms=transforms)


def _insert(core, samples, ids=None, is_static=False, max_chars=0):
    ids = [None] * len(samples) if ids is None else ids
    return insert_cdr(core, samples, ids, "test", is_static, max_chars)


# -- decoding ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 3, 40])
def test_decode_round_trips_the_encoder_for_every_padding(n):
    rng = np.random.default_rng(n)
    parents = [f"p{k}" * (k % 5 + 1) for k in range(n)]
    children = ["c" + "x" * (k % 9) + "é" * (k % 2) for k in range(n)]
    stamps = rng.integers(-(2**40), 2**60, n)
    values = rng.normal(size=(n, 7))
    got = cdr.decode_tf(cdr.encode_tf_columns(parents, children, stamps, values))
    assert got.parents == parents and got.children == children
    assert got.stamps_ns.dtype == np.int64 and got.stamps_ns.tolist() == stamps.tolist()
    assert got.values.shape == (n, 7) and np.array_equal(got.values, values)


@pytest.mark.parametrize("little_endian", [True, False])
def test_decode_reads_what_rosbags_serialises_in_both_byte_orders(little_endian):
    store = _rosbags()
    rows = [("map", "odom", (12, 345), (1.5, -2.0, 3.25, 0.0, 0.0, 0.6, 0.8)),
            ("odom", "base_link", (-3, 999_999_999), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)),
            ("/base_link", "laser_frame_with_a_longer_name", (7, 0), (1, 2, 3, 0.5, 0.5, 0.5, 0.5))]
    data = bytes(store.serialize_cdr(_rosbags_message(store, rows), "tf2_msgs/msg/TFMessage",
                                     little_endian=little_endian))
    assert data[1] == (1 if little_endian else 0)
    got = cdr.decode_tf(data)
    parents, children, stamps, values = got.parents, got.children, got.stamps_ns, got.values
    assert parents == [r[0] for r in rows] and children == [r[1] for r in rows]
    assert stamps.tolist() == [s * 1_000_000_000 + ns for _, _, (s, ns), _ in rows]
    assert values.tolist() == [list(map(float, r[3])) for r in rows]
    # ... and its rows go into the kernel alike.
    core = BufferCore(10.0)
    result = _insert(core, [data])
    assert result.stored == 3 and result.samples[0, STATUS] == 0
    t = core.lookup_transform("map", "odom", Time(12, 345)).transform
    assert (t.translation.x, t.translation.y, t.rotation.z, t.rotation.w) == (1.5, -2.0, 0.6, 0.8)


def test_rosbags_reads_what_the_encoder_writes():
    store = _rosbags()
    data = _sample(["map", "odom"], ["odom", "base"], [1_000_000_002, 3])
    message = store.deserialize_cdr(data, "tf2_msgs/msg/TFMessage")
    assert [t.child_frame_id for t in message.transforms] == ["odom", "base"]
    assert [(t.header.stamp.sec, t.header.stamp.nanosec) for t in message.transforms] == \
        [(1, 2), (0, 3)]
    assert message.transforms[1].transform.translation.x == 1.0


def test_decode_single_and_the_decoder_class_share_the_codec():
    one = _sample(["map"], ["base"], [7])
    assert cdr.decode_tf_single(one) == ("map", "base", 7, (0, 0, 0, 0, 0, 0, 1))
    assert cdr.decode_tf_single(_sample(["a", "a"], ["b", "c"])) is None
    decoder = cdr.TfDecoder()
    first = decoder.decode(_sample(["map"] * 3, ["a", "b", "c"]))
    second = decoder.decode(_sample(["map"] * 3, ["a", "b", "c"]))
    assert second.children == ["a", "b", "c"] and second.children[0] is first.children[0]  # one str per name


def test_decode_accepts_bytearray_and_memoryview_and_refuses_other_objects():
    data = _sample(["map"], ["base"])
    assert cdr.decode_tf(bytearray(data)).children == ["base"]
    assert cdr.decode_tf(memoryview(data)).children == ["base"]
    with pytest.raises(TypeError):
        decode_tf_cdr("not bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        decode_tf_cdr(np.zeros((4, 4))[:, 1])  # type: ignore[arg-type]  # not contiguous


# -- malformed samples -------------------------------------------------------------------------

GOOD = _sample(["map"], ["base_link"], [12_000_000_345])  # 4 header, count, stamp, strings at 16
BAD = [
    ("short", b"\x00\x01\x00\x00\x01\x00", "garbage", "too short"),
    ("xcdr2", b"\x00\x07" + GOOD[2:], "encoding", "encapsulation"),
    ("first byte", b"\x01\x01" + GOOD[2:], "encoding", "encapsulation"),
    ("absurd count", GOOD[:4] + struct.pack("<I", 2_000_000) + bytes(200), "too_large", "over"),
    ("count past the end", GOOD[:4] + struct.pack("<I", 2) + GOOD[8:], "garbage", "says 2"),
    ("string past the end", GOOD[:16] + struct.pack("<I", 10_000) + GOOD[20:], "garbage",
     "ends inside"),
    ("length 2**32-1", GOOD[:16] + b"\xff\xff\xff\xff" + GOOD[20:], "garbage", "ends inside"),
    ("empty string", GOOD[:16] + struct.pack("<I", 0) + GOOD[20:], "garbage", "bad frame id"),
    ("no NUL", GOOD.replace(b"map\x00", b"mapX"), "garbage", "bad frame id"),
    ("not UTF-8", GOOD.replace(b"map\x00", b"m\xffp\x00"), "garbage", "UTF-8"),
    ("overlong", GOOD.replace(b"map\x00", b"\xc0\xafp\x00"), "garbage", "UTF-8"),
    ("surrogate", GOOD.replace(b"map\x00", b"\xed\xa0\x80\x00"), "garbage", "UTF-8"),
    ("values cut", GOOD[:-1], "garbage", "ends inside"),
    ("bytes left over", GOOD + bytes(8), "garbage", "left over"),
]


@pytest.mark.parametrize("name, sample, cause, words", BAD, ids=[b[0] for b in BAD])
def test_a_malformed_sample_is_refused_with_its_cause_and_nothing_stored(name, sample, cause,
                                                                         words):
    with pytest.raises(cdr.CdrError, match=words) as info:
        cdr.decode_tf(sample)
    assert info.value.cause == cause
    core = BufferCore(10.0)
    result = _insert(core, [sample, GOOD])
    status, count, where = result.samples[0, :3].tolist()
    assert status not in (0, CDR_UNKNOWN_FRAMES)
    assert cdr.cdr_error(status, where, count, sample).cause == cause
    assert result.samples[1, STATUS] == 0 and result.stored == 1  # the round goes on
    assert core.all_frames_as_string() == "Frame base_link exists with parent map.\n"


def test_up_to_seven_bytes_of_padding_at_the_end_are_accepted():
    for extra in range(8):
        assert cdr.decode_tf(GOOD + bytes(extra)).children == ["base_link"]


def test_frame_ids_over_the_limit_in_characters_are_refused():
    within = "é" * 4096  # 8192 bytes, 4096 characters
    over = "x" * 4097
    assert cdr.decode_tf(_sample([within], ["a"]), max_chars=4096).parents == [within]
    with pytest.raises(cdr.CdrError) as info:
        cdr.decode_tf(_sample(["map", "map"], ["a", over]), max_chars=4096)
    assert info.value.cause == "frame_id_too_long" and "transform 1" in str(info.value)
    assert cdr.decode_tf(_sample([over], ["a"])).parents == [over]  # no limit asked: any length
    core = BufferCore(10.0)
    result = _insert(core, [_sample(["map"], [over])], max_chars=4096)
    assert result.samples[0, STATUS] == 7 and result.stored == 0


def test_every_truncation_of_a_valid_sample_is_refused():
    data = _sample(["map", "odom", "/x"], ["odom", "base", "y" * 13])
    core = BufferCore(10.0)
    cut = [data[:k] for k in range(len(data))]
    result = _insert(core, cut)
    assert (result.samples[:, STATUS] != 0).all() and result.stored == 0
    for sample in cut:
        with pytest.raises(cdr.CdrError):
            cdr.decode_tf(sample)


def _valid_samples():
    names = st.text(min_size=0, max_size=12)
    stamp = st.builds(lambda sec, ns: sec * 1_000_000_000 + ns,
                      st.integers(-(2**31), 2**31 - 1), st.integers(0, 999_999_999))
    row = st.tuples(names, names, stamp, st.lists(st.floats(width=64), min_size=7, max_size=7))
    return st.lists(row, max_size=6).map(lambda rows: cdr.encode_tf_columns(
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
        np.array([r[3] for r in rows], dtype=np.float64).reshape(len(rows), 7)))


@settings(max_examples=300, deadline=None)
@given(data=_valid_samples(), flips=st.lists(st.tuples(st.integers(0, 10_000),
                                                        st.integers(0, 255)), max_size=4),
       cut=st.integers(0, 10_000))
def test_mutated_samples_never_crash_and_what_is_accepted_is_what_rosbags_reads(data, flips,
                                                                                cut):
    sample = bytearray(data)
    for at, value in flips:
        if sample:
            sample[at % len(sample)] = value
    sample = bytes(sample[:max(cut, len(sample) - cut % 16)])
    decoded = decode_tf_cdr(sample)
    core = BufferCore(10.0)
    record = _insert(core, [sample]).samples[0]
    if len(decoded) == 3:  # refused: alike by both entry points, nothing stored
        assert record[STATUS] == decoded[0] and core.all_frames_as_string() == ""
        return
    assert record[STATUS] == 0 and record[COUNT] == len(decoded[0])
    store = _rosbags()
    message = store.deserialize_cdr(sample, "tf2_msgs/msg/TFMessage")
    assert [t.header.frame_id for t in message.transforms] == decoded[0]
    assert [t.child_frame_id for t in message.transforms] == decoded[1]
    for t, stamp, v in zip(message.transforms, decoded[2].tolist(), decoded[3].tolist()):
        assert stamp == t.header.stamp.sec * 1_000_000_000 + t.header.stamp.nanosec
        r, q = t.transform.translation, t.transform.rotation
        expected = [r.x, r.y, r.z, q.x, q.y, q.z, q.w]
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(v, expected))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_are_refused_or_decoded_never_a_crash(sample):
    decoded = decode_tf_cdr(sample)
    record = _insert(BufferCore(10.0), [sample, sample[:8]]).samples
    assert record[0, STATUS] == (decoded[0] if len(decoded) == 3 else 0)
    try:  # one transform said, random bytes after it
        single = cdr.decode_tf_single(b"\x00\x01\x00\x00\x01\x00\x00\x00" + sample)
    except cdr.CdrError:
        return
    assert single is not None and len(single) == 4


# -- inserting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("frame", ["map", "/map", "//map", "", "/", "a/b", "é"])
@pytest.mark.parametrize("robot", ["robot7", "site/robot7", ""])
def test_frame_ids_are_prefixed_as_the_fleet_names_them(robot, frame):
    ids = FrameIds(f"{robot}/" if robot else "")
    ids.admit([frame, "child"])
    core = BufferCore(10.0)
    result = _insert(core, [_sample([frame], ["child"])], [ids])
    expected = BufferCore(10.0)
    reference = expected.set_transforms([prefix_frame(robot, frame)], [prefix_frame(robot, "child")],
                                        np.array([5_000_000_000]), np.array([IDENTITY]), "test")
    assert (result.stored, len(result.samples)) == (reference.stored, 1)
    assert core.all_frames_as_string() == expected.all_frames_as_string()
    assert cdr.decode_tf(_sample([frame], ["child"]), prefix=ids.prefix).parents == \
        [prefix_frame(robot, frame)]


def test_a_sample_naming_frames_not_admitted_comes_back_unstored():
    ids = FrameIds("robot7/")
    ids.admit(["map", "a"])
    core = BufferCore(10.0)
    data = _sample(["map", "map", "map"], ["a", "b", "c"])
    result = _insert(core, [data], [ids])
    assert result.samples[0, STATUS] == CDR_UNKNOWN_FRAMES and result.samples[0, WHERE] == 1
    assert result.stored == 0 and core.all_frames_as_string() == ""
    assert ids.admit(["map", "b", "c"]) == 2 and len(ids) == 4
    result = _insert(core, [data], [ids])
    assert result.stored == 3 and result.samples[0, STATUS] == 0
    assert core.lookup_transform("robot7/map", "robot7/c", Time()).transform.translation.x == 2.0


def test_invalid_rows_are_dropped_and_counted_as_set_transforms_does():
    parents = ["map", "map", "map", "", "map", "map", "map", "map"]
    children = ["a", "b", "c", "d", "map", "NO_PARENT", "/", "e"]
    values = np.tile(IDENTITY, (8, 1))
    values[1, 0] = math.nan
    values[2, 6] = 2.0  # not a unit quaternion
    values[7, 6] = 1.001  # within tf2's tolerance: normalised, stored
    stamps = np.arange(8, dtype=np.int64) + 1_000_000_000
    reference = BufferCore(10.0).set_transforms(parents, children, stamps, values, "test")
    core = BufferCore(10.0)
    result = _insert(core, [cdr.encode_tf_columns(parents, children, stamps, values)])
    record = result.samples[0]
    assert (record[STORED], record[OLD], record[INVALID]) == \
        (reference.stored, reference.old, len(reference.invalid)) == (2, 0, 6)
    assert record[FIRST_INVALID] == reference.invalid[0][0] == 1
    assert record[CODE] < 0 and record[FIRST_STAMP] == 1_000_000_000


def test_rows_older_than_the_cache_are_counted_old():
    core = BufferCore(1.0)
    _insert(core, [_sample(["map"], ["a"], [10_000_000_000])])
    result = _insert(core, [_sample(["map", "map"], ["a", "a"], [1, 10_500_000_000])])
    assert (result.stored, result.old) == (1, 1)
    assert result.samples[0, [STORED, OLD]].tolist() == [1, 1]


def test_a_round_of_many_samples_of_many_robots_in_one_call():
    robots = [FrameIds(f"robot{r}/") for r in range(20)]
    children = [f"link{k}" for k in range(50)]
    for ids in robots:
        ids.admit(["base"] + children)
    samples, owners = [], []
    for cycle in range(10):
        for r, ids in enumerate(robots):
            values = np.tile(IDENTITY, (50, 1))
            values[:, 0] = r * 1000 + cycle
            values[:, 1] = np.arange(50)
            samples.append(cdr.encode_tf_columns(["base"] * 50, children,
                                                 [1_000_000_000 * (cycle + 1)] * 50, values))
            owners.append(ids)
    core = BufferCore(30.0)
    result = _insert(core, samples, owners)
    assert (result.stored, result.old) == (10_000, 0)
    assert (result.samples[:, STATUS] == 0).all() and (result.samples[:, STORED] == 50).all()
    t = core.lookup_transform("robot13/base", "robot13/link7", Time(4)).transform.translation
    assert (t.x, t.y) == (13_003.0, 7.0)
    assert "broadcaster: 'test'" in core.all_frames_as_yaml()
    # The same FrameIds with another kernel: its cached ids start afresh.
    other = BufferCore(30.0)
    other.set_transforms(["x"], ["y"], np.array([1]), np.array([IDENTITY]), "first")
    assert _insert(other, samples[:20], owners[:20]).stored == 1000
    assert other.lookup_transform("robot0/base", "robot0/link3", Time(1)).transform.translation.y == 3


def test_statics_go_in_as_statics():
    core = BufferCore(10.0)
    _insert(core, [_sample(["map"], ["fixed"], [5])], is_static=True)
    assert core.lookup_transform("map", "fixed", Time(1000)).transform.rotation.w == 1.0


def test_bad_arguments_raise_and_store_nothing():
    core = BufferCore(10.0)
    with pytest.raises(TypeError):
        core._kernel.insert_cdr(["text"], [None], "a", False)
    with pytest.raises(TypeError):
        core._kernel.insert_cdr([GOOD], ["not frame ids"], "a", False)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        core._kernel.insert_cdr([GOOD, GOOD], [None], "a", False)
    ids = FrameIds("r/")
    assert ids.names() == frozenset()
    with pytest.raises(TypeError):
        ids.admit(["a", 1])  # type: ignore[list-item]
    assert ids.names() == {"r/a"}  # what was admitted before the refusal
    assert core.all_frames_as_string() == ""


def test_a_buffer_insert_wakes_a_waiting_can_transform():
    buffer = Buffer(cache_time=10.0)
    ids = FrameIds("robot1/")
    ids.admit(["map", "base"])
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(
        buffer.can_transform("robot1/map", "robot1/base", Time(5), timeout=10.0)))
    waiter.start()
    deadline = time.monotonic() + 10.0
    while not buffer._index.waiting and time.monotonic() < deadline:  # the waiter waits
        threading.Event().wait(0.001)
    assert buffer._index.waiting
    result = insert_cdr(buffer, [_sample(["map"], ["base"], [5_000_000_000])], [ids], "test")
    waiter.join(timeout=10.0)
    assert result.stored == 1 and answers == [True]


def test_a_buffer_insert_resolves_a_pending_request_by_the_frames_it_names():
    buffer = Buffer(cache_time=10.0)
    ids = FrameIds("robot2/")
    ids.admit(["map", "base", "/arm"])
    assert ids.names() == {"robot2/map", "robot2/base", "robot2/arm"}
    future = buffer.wait_for_transform_async("robot2/map", "robot2/arm", Time(5))
    other = buffer.wait_for_transform_async("robot9/map", "robot9/arm", Time(5))
    insert_cdr(buffer, [_sample(["map", "base"], ["base", "/arm"], [5_000_000_000] * 2)],
               [ids], "test")
    assert future.result(timeout=10.0).child_frame_id == "robot2/arm"
    assert not other.done()
    other.cancel()


_EXIT_INSIDE_A_ROUND = """
import threading
import numpy as np
from tf2py import BufferCore
from tf2py.buffer.batch import insert_cdr
from tf2py.transport.ros2 import cdr

core = BufferCore(10.0)
children = [f"c{k}" for k in range(50)]
sample = cdr.encode_tf_columns(["base"] * 50, children, [5] * 50, np.tile(%r, (50, 1)))
parents, names = ["base"] * 50_000, children * 1000
stamps, rows = np.full(50_000, 5, dtype=np.int64), np.tile(%r, (50_000, 1))
rounds = threading.Semaphore(0)

def insert():
    while True:  # rounds without the GIL, back to back, until the interpreter exits
        if %r:
            insert_cdr(core, [sample] * 1000, [None] * 1000, "test")
        else:
            core.set_transforms(parents, names, stamps, rows, "test")
        rounds.release()

threading.Thread(target=insert, daemon=True).start()
for _ in range(3):
    rounds.acquire()
"""


@pytest.mark.parametrize("through_cdr", [True, False])
def test_the_process_exits_cleanly_while_a_daemon_thread_is_inside_a_round(through_cdr):
    import subprocess
    import sys

    script = _EXIT_INSIDE_A_ROUND % (IDENTITY, IDENTITY, through_cdr)
    for _ in range(3):  # the exit meets the thread without the GIL most times
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and "terminate" not in done.stderr, done.stderr


# -- a robot's frame ids remembered from one sample to the next ---------------------------------

_FRAME = st.sampled_from(["a", "b", "ab", "ba", "aa", "/a", "", "b/c", "bc"])
_ROWS = st.lists(st.tuples(_FRAME, _FRAME), min_size=0, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROWS, min_size=1, max_size=8), st.sets(_FRAME))
def test_frame_ids_remembered_from_the_last_sample_find_what_a_fresh_lookup_finds(samples, admitted):
    """The kernel compares a sample's frame ids with the previous sample's of the same
    FrameIds before it looks them up one by one: ids that only look alike when run together
    ("a" + "ba" and "ab" + "a"), other orders, other counts and ids never admitted must be
    found (or refused) exactly as a FrameIds that never saw a sample does."""
    kept = FrameIds("r/")
    kept.admit(sorted(admitted))
    remembered, fresh = BufferCore(10.0), BufferCore(10.0)
    for k, rows in enumerate(samples):
        data = _sample([p for p, _ in rows], [c for _, c in rows],
                       [1_000_000_000 * (k + 1)] * len(rows))
        once = FrameIds("r/")
        once.admit(sorted(admitted))
        got = _insert(remembered, [data, data], [kept, kept])
        want = _insert(fresh, [data, data], [once, once])
        assert got.samples.tolist() == want.samples.tolist()
        assert (got.stored, got.old) == (want.stored, want.old)
    assert remembered.all_frames_as_string() == fresh.all_frames_as_string()
    assert sorted(remembered.get_frames()) == sorted(fresh.get_frames())
    for frame in remembered.get_frames():
        assert remembered.samples(frame) == fresh.samples(frame)


def test_an_insert_made_from_a_destructor_inside_an_insert_keeps_both_rounds_whole():
    """The kernel keeps its working vectors between calls; an authority whose ``__del__``
    inserts again (run when a later insert replaces it) gets vectors of its own, and neither
    round loses or mixes rows."""
    core = BufferCore(10.0)
    inner = _sample(["map", "map"], ["x", "y"], [7_000_000_000, 7_000_000_000])

    class Authority:
        def __del__(self):
            Authority.result = insert_cdr(core, [inner], [None], "inner", False)

    outer = [_sample(["map"] * 3, ["a", "b", "c"], [5_000_000_000] * 3)]
    insert_cdr(core, outer, [None], Authority(), False)
    result = insert_cdr(core, [_sample(["map"] * 3, ["a", "b", "c"], [6_000_000_000] * 3)],
                        [None], "second", False)
    assert result.stored == 3 and Authority.result.stored == 2
    assert [s[0] for s in core.samples("a")] == [5_000_000_000, 6_000_000_000]
    assert core.lookup_transform("map", "y", Time()).header.stamp.nanoseconds == 7_000_000_000


def test_a_robot_that_sends_several_messages_in_turn_has_each_stored_under_its_own_frames():
    # Its joints, its odometry and its localisation: three layouts in turn, then a fourth and
    # a fifth (more than the kernel remembers), each sample's rows under the right names.
    ids = FrameIds("r/")
    messages = [(["base_link", "base_link"], ["arm", "wheel"]), (["odom"], ["base_link"]),
                (["map"], ["odom"]), (["arm"], ["hand"]), (["hand", "hand"], ["f1", "f2"])]
    ids.admit(sorted({f for parents, children in messages for f in parents + children}))
    core = BufferCore(10.0)
    for k in range(12):
        parents, children = messages[k % len(messages) if k >= 6 else k % 3]
        stamp = 1_000_000_000 * (k + 1)
        values = np.tile(IDENTITY, (len(parents), 1))
        values[:, 0] = k
        result = _insert(core, [_sample(parents, children, [stamp] * len(parents), values)], [ids])
        assert result.stored == len(parents)
        for parent, child in zip(parents, children):
            latest = core.lookup_transform(f"r/{parent}", f"r/{child}", Time())
            assert (latest.header.stamp.nanoseconds, latest.transform.translation.x) == (stamp, k)

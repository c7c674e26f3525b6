"""BufferCore.forget_frames: frames forgotten whole, data and names (tf2py fleet's robots gone
for good), and every cache of ids by name in the kernel starting afresh."""

from __future__ import annotations

import numpy as np
import pytest

from tf2py import Buffer, BufferCore, LookupException, Time, make_transform
from tf2py.buffer.batch import FrameIds, insert_cdr
from tf2py.transport.ros2.cdr import encode_tf_columns

IDENTITY = [0.0, 0, 0, 0, 0, 0, 1]


def _sample(parents: list[str], children: list[str], x: float, stamp_s: int) -> bytes:
    values = np.tile(np.array(IDENTITY), (len(parents), 1))
    values[:, 0] = x
    return encode_tf_columns(parents, children, np.full(len(parents), stamp_s * 10**9, np.int64),
                             values)


def _robot(buffer: BufferCore) -> None:
    buffer.set_transform_static(make_transform("world", "r1/map", (1, 0, 0)), "t")
    buffer.set_transform(make_transform("r1/map", "r1/base_link", (2, 0, 0), stamp=1.0), "t")
    buffer.set_transform_static(make_transform("r1/base_link", "r1/laser", (0, 0, 1)), "t")
    buffer.set_transform(make_transform("world", "r2/base_link", (5, 0, 0), stamp=1.0), "t")


@pytest.mark.parametrize("kind", [Buffer, BufferCore])
def test_forgotten_frames_are_unknown_as_frames_never_heard(kind):
    buffer = kind()
    _robot(buffer)
    assert buffer.forget_frames(["r1/base_link", "r1/laser", "unknown", 7]) == 2
    assert sorted(buffer.get_frames()) == ["r1/map", "r2/base_link", "world"]
    for target, source, missing in (("world", "r1/laser", "source_frame"),
                                    ("r1/base_link", "world", "target_frame")):
        with pytest.raises(LookupException) as info:
            buffer.lookup_transform(target, source, Time())
        assert f"argument {missing} does not exist" in str(info.value)
        assert "'r1/laser'?" not in str(info.value) and "'r1/base_link'?" not in str(info.value)
    assert not buffer.can_transform("world", "r1/laser", Time())
    assert "r1/laser" not in buffer.all_frames_as_string()
    assert "r1/base_link" not in buffer.all_frames_as_yaml()
    # what was not forgotten answers as before
    assert buffer.lookup_transform("world", "r2/base_link", Time()).transform.translation.x == 5
    assert buffer.lookup_transform("world", "r1/map", Time()).transform.translation.x == 1
    assert buffer.forget_frames(["r1/laser"]) == 0  # already forgotten


def test_a_forgotten_name_heard_again_starts_afresh():
    buffer = BufferCore()
    _robot(buffer)
    buffer.forget_frames(["r1/base_link", "r1/laser"])
    buffer.set_transform(make_transform("r1/map", "r1/base_link", (7, 0, 0), stamp=3.0), "t")
    t = buffer.lookup_transform("world", "r1/base_link", Time())
    assert (t.transform.translation.x, t.header.stamp) == (8.0, Time(3))
    with pytest.raises(LookupException):  # its old child is not back
        buffer.lookup_transform("world", "r1/laser", Time())
    with pytest.raises(Exception, match="only time 3.000000 is in the buffer"):  # old samples gone
        buffer.lookup_transform("world", "r1/base_link", Time(1))


def test_a_name_object_the_kernel_remembers_leads_to_the_new_id_after():
    # The kernel remembers the ids of the str objects a batch insert named; a forgotten
    # name's object must not lead to its old id (its rows would be lost there).
    buffer = BufferCore()
    _robot(buffer)
    name = "".join(["r1/", "base_link"])  # one object, used for every call below
    for x, stamp in ((2.0, 1), (3.0, 2)):
        buffer.set_transforms(["r1/map"], [name], np.array([stamp * 10**9]),
                              np.array([[x, 0, 0, 0, 0, 0, 1]]), "t")
    buffer.forget_frames([name])
    with pytest.raises(LookupException):
        buffer.lookup_transform("world", name, Time())
    result = buffer.set_transforms(["r1/map"], [name], np.array([5 * 10**9]),
                                   np.array([[4.0, 0, 0, 0, 0, 0, 1]]), "t")
    assert result.stored == 1
    t = buffer.lookup_transform("world", name, Time())
    assert (t.transform.translation.x, t.header.stamp) == (5.0, Time(5))


def test_frame_ids_that_knew_the_old_ids_store_under_the_new_ones():
    core = BufferCore(100.0)
    ids = FrameIds("r1/")
    ids.admit(["map", "base_link"])
    first = _sample(["map"], ["base_link"], 1.0, 1)
    assert insert_cdr(core, [first], [ids], "t", False, 0).stored == 1
    core.forget_frames(["r1/map", "r1/base_link"])
    assert core.get_frames() == []
    again = _sample(["map"], ["base_link"], 2.0, 2)
    assert insert_cdr(core, [again], [ids], "t", False, 0).stored == 1
    assert sorted(core.get_frames()) == ["r1/base_link", "r1/map"]
    t = core.lookup_transform("r1/map", "r1/base_link", Time())
    assert (t.transform.translation.x, t.header.stamp) == (2.0, Time(2))


def test_forgetting_while_rounds_go_in_and_lookups_run_breaks_nothing():
    # One thread inserts rounds of 20 robots (their FrameIds), one forgets robots, one looks
    # up: no crash, no error but "does not exist"/"extrapolation"/"connect", and afterwards
    # every robot inserted again is whole.
    import threading

    core = BufferCore(100.0)
    robots = [FrameIds(f"r{k}/") for k in range(20)]
    for ids in robots:
        ids.admit(["map", "odom", "base"])
    stop = threading.Event()
    failures: list[BaseException] = []
    done = {"rounds": 0, "forgets": 0}

    def insert() -> None:
        stamp = 1
        while not stop.is_set():
            samples = [_sample(["map", "odom"], ["odom", "base"], float(stamp), stamp)
                       for _ in robots]
            try:
                insert_cdr(core, samples, robots, "t", False, 0)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)
                return
            stamp += 1
            done["rounds"] += 1

    def forget() -> None:
        k = 0
        while not stop.is_set():
            core.forget_frames([f"r{k % 20}/map", f"r{k % 20}/odom", f"r{k % 20}/base"])
            k += 1
            done["forgets"] += 1

    def look() -> None:
        k = 0
        while not stop.is_set():
            try:
                core.lookup_transform(f"r{k % 20}/map", f"r{k % 20}/base", Time())
            except Exception as exc:  # noqa: BLE001 - only the lookup's own errors may come
                words = str(exc)
                if not any(w in words for w in ("does not exist", "extrapolation", "connect")):
                    failures.append(exc)
                    return
            k += 1

    threads = [threading.Thread(target=f) for f in (insert, forget, look)]
    for t in threads:
        t.start()
    deadline = Time.now().nanoseconds + 120 * 10**9  # (until enough of both went by)
    while not failures and (done["rounds"] < 200 or done["forgets"] < 2000) and \
            Time.now().nanoseconds < deadline:
        stop.wait(0.01)
    stop.set()
    for t in threads:
        t.join(30)
    assert not failures, failures
    assert done["rounds"] >= 200 and done["forgets"] >= 2000, done
    final = [_sample(["map", "odom"], ["odom", "base"], 1e6, 10**6) for _ in robots]
    assert insert_cdr(core, final, robots, "t", False, 0).stored == 40
    for k in range(20):
        t = core.lookup_transform(f"r{k}/map", f"r{k}/base", Time(10**6))
        assert t.transform.translation.x == 2e6

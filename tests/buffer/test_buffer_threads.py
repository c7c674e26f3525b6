"""Many reader threads, one writer thread and an async requester on one Buffer: no errors
other than tf2's own, no torn reads, every request resolved, all within a deadline."""

from __future__ import annotations

import random
import threading
import time as wall

import numpy as np

from tf2py.buffer.buffer import Buffer
from tf2py.buffer.exceptions import TransformException
from tf2py.buffer.messages import Header, Point, PointStamped, make_transform
from tf2py.buffer.time import Time

RUN_SECONDS = 1.5
JOIN_SECONDS = 20.0
STEP_NS = 10_000_000  # the writer's 100 Hz


def test_readers_and_a_writer_share_a_buffer_safely():
    buffer = Buffer(cache_time=2.0)
    buffer.set_transform_static(make_transform("base", "laser", (0.0, 0.0, 1.0)), "test")
    stop = threading.Event()
    unexpected: list[BaseException] = []
    counts = {"ok": 0, "tf2": 0}
    counts_lock = threading.Lock()
    last_stamp = [0]

    def writer():
        rng = random.Random(1)
        k = 1
        try:
            while not stop.is_set():
                ns = k * STEP_NS
                x = ns / 1e9  # map -> odom moves 1 m/s along x: x == stamp in seconds
                kind = k % 3
                if kind == 0:
                    stamp = Time.from_nanoseconds(ns)
                    buffer.set_transform(make_transform("map", "odom", (x, 0, 0), stamp=stamp), "w")
                elif kind == 1:
                    buffer.set_transform_values("map", "odom", ns, x, 0, 0, 0, 0, 0, 1, "w")
                else:
                    buffer.set_transforms(
                        ["map"], ["odom"], np.array([ns]), np.array([[x, 0, 0, 0, 0, 0, 1.0]]), "w"
                    )
                buffer.set_transform_values("odom", "base", ns, 0, 0.5, 0, 0, 0, 0, 1, "w")
                last_stamp[0] = ns
                if rng.random() < 0.002:
                    buffer.clear()
                k += 1
        except BaseException as exc:  # pragma: no cover - reported by the assertion
            unexpected.append(exc)

    def reader(seed):
        rng = random.Random(seed)
        ok = tf2 = 0
        while not stop.is_set():
            try:
                choice = rng.randrange(8)
                latest = last_stamp[0]
                if choice == 0:
                    t = buffer.lookup_transform("map", "odom", 0)
                    assert abs(t.transform.translation.x - t.header.stamp.to_seconds()) < 1e-6
                elif choice == 1:
                    back = rng.randrange(1, 50) * STEP_NS // 2
                    stamp = Time.from_nanoseconds(max(latest - back, 1))
                    t = buffer.lookup_transform("map", "laser", stamp)
                    assert abs(t.transform.translation.x - stamp.to_seconds()) < 1e-6
                    assert abs(t.transform.translation.z - 1.0) < 1e-9
                elif choice == 2:
                    buffer.can_transform("map", "laser", Time.from_nanoseconds(latest))
                elif choice == 3:
                    out = buffer.transform_points(np.ones((16, 3)), "map", "laser", 0)
                    assert out.shape == (16, 3)
                elif choice == 4:
                    buffer.all_frames_as_yaml()
                    buffer.all_frames_as_string()
                    assert "odom" in buffer.get_frames()
                elif choice == 5:
                    stamps = np.linspace(latest - 40 * STEP_NS, latest, 64) / 1e9
                    m = buffer.lookup_transforms("map", "odom", stamps)
                    np.testing.assert_allclose(m[:, 0, 3], stamps, atol=1e-6)
                elif choice == 6:
                    # wait a little for data one step ahead of the writer
                    buffer.lookup_transform(
                        "map", "base", Time.from_nanoseconds(latest + STEP_NS), timeout=0.05
                    )
                else:
                    buffer.transform(
                        PointStamped(Header(Time.from_nanoseconds(latest), "laser"), Point()),
                        "odom",
                    )
                ok += 1
            except TransformException:
                tf2 += 1  # expected: data not there yet, pruned, or cleared
            except BaseException as exc:
                unexpected.append(exc)
                return
        with counts_lock:
            counts["ok"] += ok
            counts["tf2"] += tf2

    futures = []

    def requester():
        rng = random.Random(9)
        try:
            while not stop.is_set():
                ahead = last_stamp[0] + rng.randrange(1, 5) * STEP_NS
                stamp = Time.from_nanoseconds(ahead)
                future = buffer.wait_for_transform_async("map", "base", stamp)
                if rng.random() < 0.2:
                    future.cancel()
                futures.append((ahead, future))
                wall.sleep(0.001)  # pace the requests (not a correctness wait)
        except BaseException as exc:  # pragma: no cover
            unexpected.append(exc)

    threads = [threading.Thread(target=writer, name="stress-writer", daemon=True)]
    threads += [
        threading.Thread(target=reader, args=(i,), name=f"stress-reader-{i}", daemon=True)
        for i in range(4)
    ]
    threads.append(threading.Thread(target=requester, name="stress-requester", daemon=True))
    for thread in threads:
        thread.start()
    stop.wait(RUN_SECONDS)
    stop.set()
    deadline = wall.monotonic() + JOIN_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - wall.monotonic()))
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    assert unexpected == []
    assert counts["ok"] > 0, counts
    print("stress:", counts, "requests:", len(futures))

    # Every request whose stamp the writer reached was resolved (or cancelled).
    final = last_stamp[0]
    for ahead, future in futures:
        if ahead <= final - 2 * STEP_NS:
            assert future.done(), f"request for {ahead} ns not resolved (writer at {final})"
    # The stamp was reached, so the result (when not cancelled) is a transform, or the
    # request was cut by clear()/pruning into an error no data can cure.
    for _, future in futures:
        if future.done() and not future.cancelled() and future.exception() is None:
            assert future.result().child_frame_id == "base"
    buffer_pending = buffer.pending_request_count
    unresolved = sum(1 for _, f in futures if not f.done())
    assert buffer_pending == unresolved

"""The bus under attack: a bounded campaign of the issue-11 attack classes, and the cost of keys.

    python -m bench faults_bus            # default campaign (~2 min)
    python -m bench faults_bus --full     # the issue's exact figures (30 s freeze)

Prints one table: per attack class, the inputs tried, crashes (core or listener thread gone:
must be 0), valid transforms lost (must be 0), and the peak memory (VmHWM) of the core process
and of the listener, against the bound the core promises. Then, with keys (ZeroMQ CURVE) vs
plain in the same run: bus ingest (transforms/s, CPU per transform) and buffer-server round
trips (p50/p99).

Every core here is a real `tf2py core` process; the frozen listener is a real listener process
stopped with SIGSTOP.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import signal
import subprocess
import tempfile
import time

import zmq

from bench.faults_bus_support import (
    LISTENER,
    MB,
    ROWS,
    STATIC,
    SUB_BOUND_MB,
    CoreProcess,
    probe_ok,
    row,
    stalled_sub,
    subscribe_endpoint,
)
from bench.harness import PY, REPO, Run, cpu_seconds, hwm_mib, rss_mib, wait_until, watch_peak_mib
from tf2py import make_transform
from tf2py.buffer.buffer import Buffer
from tf2py.transport import wire
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq import core as core_module
from tf2py.transport.zmq.keys import add_identity, create_site

# -- attack classes ---------------------------------------------------------------------------


def replay_storm(n_statics: int, resubscriptions: int, watch: float = 5.0):
    core = CoreProcess()
    try:
        with StaticTransformBroadcaster(core.address) as static:
            static.send_transform([make_transform("world", f"s{i}", (i, 0, 0))
                                   for i in range(n_statics)])
            ok = probe_ok(core.address, f"s{n_statics - 1}")
            base = rss_mib(core.pid)
            stalled = stalled_sub(core.address)
            again = zmq.Context.instance().socket(zmq.SUB)
            again.setsockopt(zmq.LINGER, 0)
            again.connect(subscribe_endpoint(core.address))
            for _ in range(resubscriptions):
                again.setsockopt(zmq.SUBSCRIBE, b"/tf")
                again.setsockopt(zmq.UNSUBSCRIBE, b"/tf")
            peak = watch_peak_mib(core.pid, watch)
            ok = ok and probe_ok(core.address, "s0")
            stalled.close(0)
            again.close(0)
        row(f"replay storm: {n_statics} statics, stalled sub, {resubscriptions} resubs",
            resubscriptions, 0 if core.alive() else 1, 0 if ok else n_statics,
            f"{base:.0f}->{peak:.0f}", "-", f"+{SUB_BOUND_MB:.0f} per sub",
            "issue: +752 MB")
    finally:
        core.close()


def frozen_listener(seconds: float, rate: float = 300.0):
    core = CoreProcess()
    listener = subprocess.Popen([PY, "-c", LISTENER, core.address], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        listener.stdout.readline()
        big = [make_transform("world", f"link{i:05d}", (i, 0, 0), stamp=1.0) for i in range(1190)]
        size = len(wire.encode_transforms(big, "bench"))
        with TransformBroadcaster(core.address) as b:
            time.sleep(0.5)
            listener.send_signal(signal.SIGSTOP)
            base = rss_mib(core.pid)
            peak = base
            sent = 0
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                b.send_transform(big)
                sent += 1
                if sent % 30 == 0:
                    peak = max(peak, rss_mib(core.pid))
                next_at = t0 + sent / rate
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            peak = max(peak, watch_peak_mib(core.pid, 1.0))
            listener_peak = hwm_mib(listener.pid)
            listener.send_signal(signal.SIGCONT)
            listener.stdin.write("\n")
            listener.stdin.flush()
            out = listener.stdout.readline()
        alive = core.alive() and out.startswith("frames")
        row(f"frozen listener: {size // 1000} KB msgs at {rate:.0f} Hz for {seconds:.0f} s",
            sent, 0 if alive else 1, 0, f"{base:.0f}->{peak:.0f}", f"{listener_peak:.0f}",
            f"+{SUB_BOUND_MB:.0f} per sub", "issue: 33->865 MB")
    finally:
        if listener.poll() is None:
            listener.send_signal(signal.SIGCONT)
            listener.kill()
        listener.wait()
        core.close()


def garbage_and_long_ids(n_garbage: int, n_long: int):
    """Garbage, mutated bodies, wrong frame counts, unknown topics and 1 MB frame ids,
    interleaved with valid transforms that must all arrive."""
    core = CoreProcess()
    rng = random.Random(11)
    valid_body = wire.encode_transforms(
        [make_transform("world", f"v{i}", stamp=1) for i in range(3)], "bench")
    try:
        buffer = Buffer()
        with TransformListener(buffer, core.address) as listener:
            gc.collect()
            base_self = rss_mib(os.getpid())
            pub = zmq.Context.instance().socket(zmq.PUB)
            pub.setsockopt(zmq.LINGER, 1000)
            pub.setsockopt(zmq.SNDHWM, 0)
            pub.connect(core.address)
            wait_until(lambda: pub.send_multipart([b"/tf", wire.encode_transforms(
                [make_transform("world", "probe", stamp=1)], "b")]) or
                buffer.can_transform("world", "probe", 0))
            tried = 0
            valid_children = []
            for i in range(n_garbage):
                kind = i % 5
                if kind == 0:
                    frames = [b"/tf", os.urandom(rng.randint(0, 300))]
                elif kind == 1:
                    body = bytearray(valid_body)
                    for _ in range(rng.randint(1, 8)):
                        body[rng.randrange(len(body))] = rng.randrange(256)
                    frames = [b"/tf", bytes(body)]
                elif kind == 2:
                    frames = [b"/tf"] if i % 2 else [b"/tf", valid_body, b"x"]
                elif kind == 3:
                    frames = [rng.choice([b"/tfx", b"latch/other", b"/tf_static"]), valid_body]
                else:
                    frames = [b"latch/tf_static/" + os.urandom(4).hex().encode() + b"/1",
                              bytes(bytearray(valid_body)[: rng.randrange(len(valid_body))])]
                pub.send_multipart(frames)
                tried += 1
                if i % 50 == 0:
                    child = f"good{i}"
                    valid_children.append(child)
                    pub.send_multipart([b"/tf", wire.encode_transforms(
                        [make_transform("world", child, stamp=1)], "bench")])
                if i % 500 == 0:
                    time.sleep(0.01)
            attacker = zmq.Context.instance().socket(zmq.PUB)  # the core cuts it: own socket
            attacker.setsockopt(zmq.LINGER, 0)
            attacker.connect(core.address)
            time.sleep(0.3)
            for i in range(n_long):
                # 1 MB ids (the core refuses the message: over 16 KiB) and 20 000-char ids
                # (they reach the listener, which drops them)
                length, sock = (1_000_000, attacker) if i % 2 else (10_000, pub)
                sock.send_multipart([b"/tf", wire.encode_arrays(
                    ["world"], [f"{i}" + "y" * length], [1], [[0, 0, 0, 0, 0, 0, 1]], "bench")])
                tried += 1
            attacker.close(0)
            pub.send_multipart([b"/tf", wire.encode_transforms(
                [make_transform("world", "last", stamp=1)], "bench")])
            wait_until(lambda: buffer.can_transform("world", "last", 0), 30)
            gc.collect()
            grown = rss_mib(os.getpid()) - base_self
            lost = sum(1 for c in valid_children if not buffer.can_transform("world", c, 0))
            crashed = (not core.alive()) + (not listener._loop._thread.is_alive())
            long_kept = sum(1 for f in buffer.get_frames() if len(f) > wire.MAX_FRAME_ID_LENGTH)
            lost += long_kept  # (counted as a failure too)
            pub.close()
        row(f"garbage/mutated/shape/topic x{n_garbage}, long frame ids x{n_long}", tried,
            crashed, lost, f"{core.base_mb:.0f}->{hwm_mib(core.pid):.0f}",
            f"+{max(0.0, grown):.0f}", "ids <= 4096 chars", "issue: +97 MB listener")
    finally:
        core.close()


def invalid_statics(n: int):
    """Each round latches a valid static (x = round number, seen by a live listener, so the
    core has it), then sends an invalid one for the same frame; a late listener must get the
    last valid one of every frame."""
    core = CoreProcess()
    bad_values = [(math.nan, 0, 0), (math.inf, 0, 0)]
    try:
        tried = lost = 0
        last = {}
        live = Buffer()
        with StaticTransformBroadcaster(core.address) as static, \
                TransformListener(live, core.address):
            for i in range(n):
                child = f"cam{i % 10}"
                x = float(i + 1)
                static.send_transform(make_transform("world", child, (x, 2, 3)))
                wait_until(lambda: live.can_transform("world", child, 0) and
                     live.lookup_transform("world", child, 0).transform.translation.x == x)
                last[child] = x
                kind = i % 4
                if kind < 2:
                    bad = make_transform("world", child, bad_values[kind])
                elif kind == 2:
                    bad = make_transform("world", child, (0, 0, 0), (0.0, 0.0, 0.0, 0.3))
                else:
                    bad = make_transform(child, child)
                static.send_transform(bad)
                tried += 1
            time.sleep(0.5)
            b = Buffer()
            with TransformListener(b, core.address):
                wait_until(lambda: all(b.can_transform("world", c, 0) for c in last))
                for child, x in last.items():
                    try:
                        t = b.lookup_transform("world", child, 0)
                        lost += t.transform.translation.x != x
                    except Exception:
                        lost += 1
        row("invalid statics after valid ones (NaN, inf, bad quaternion, own parent)", tried,
            0 if core.alive() else 1, lost, f"{core.base_mb:.0f}->{hwm_mib(core.pid):.0f}",
            "-", "latched <= 256 MiB")
    finally:
        core.close()


def dead_publishers(n: int):
    core = CoreProcess()
    try:
        worst = 0.0
        leftovers = 0
        for i in range(n):
            p = subprocess.Popen([PY, "-c", STATIC, core.address, f"dead{i}"],
                                 stdout=subprocess.PIPE, text=True, cwd=REPO)
            p.stdout.readline()
            probe_ok(core.address, f"dead{i}")
            p.kill()
            p.wait()
            t0 = time.monotonic()
            b = Buffer()
            gone = False
            while time.monotonic() - t0 < 10:
                b = Buffer()
                with TransformListener(b, core.address):
                    time.sleep(0.3)
                    if not b.can_transform("world", f"dead{i}", 0):
                        gone = True
                        break
            worst = max(worst, time.monotonic() - t0)
            leftovers += not gone
        row(f"statics of SIGKILLed publishers (x{n})", n, 0 if core.alive() else 1, 0,
            f"{core.base_mb:.0f}->{hwm_mib(core.pid):.0f}", "-", "gone <= 5 s",
            f"worst {worst:.1f} s, {leftovers} left")
    finally:
        core.close()


def oversized_sends():
    core = CoreProcess()
    try:
        rows = [make_transform("p" * 4000, f"{i}" + "c" * 4000) for i in range(8500)]
        raised = 0
        with TransformBroadcaster(core.address) as b, \
                StaticTransformBroadcaster(core.address) as s:
            for sender in (b, s):
                try:
                    sender.send_transform(rows)
                except ValueError:
                    raised += 1
        row("send_transform over 64 MiB (dynamic, static)", 2, 0 if core.alive() else 1,
            0, f"{core.base_mb:.0f}->{hwm_mib(core.pid):.0f}", "-", "raises in sender",
            f"{raised}/2 raised")
    finally:
        core.close()


def strangers(site, foreign, seconds: float):
    core = CoreProcess(keys=site)
    try:
        buffer = Buffer()
        sent = 0
        with TransformListener(buffer, core.address, keys=site) as listener, \
                TransformBroadcaster(core.address) as keyless, \
                TransformBroadcaster(core.address, keys=foreign) as other, \
                StaticTransformBroadcaster(core.address, keys=foreign) as other_static, \
                TransformBroadcaster(core.address, keys=site) as good:
            other_static.send_transform(make_transform("world", "evil_static"))
            wait_until(lambda: good.send_transform(make_transform("world", "good", stamp=1)) or
                 buffer.can_transform("world", "good", 0))
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                keyless.send_transform(make_transform("world", "evil", stamp=1))
                other.send_transform(make_transform("world", "evil2", stamp=1))
                sent += 2
                time.sleep(0.002)
            reached = len(set(buffer.get_frames()) - {"world", "good"})
            crashed = (not core.alive()) + (not listener._loop._thread.is_alive())
        row("strangers on a keyed bus (no keys, other site's keys)", sent, crashed, 0,
            f"{core.base_mb:.0f}->{hwm_mib(core.pid):.0f}", "-", "0 reach a listener",
            f"{reached} frames reached")
    finally:
        core.close()


# -- cost of keys -----------------------------------------------------------------------------


def ingest(keys, n: int):
    core = CoreProcess(keys=keys)
    try:
        buffer = Buffer()
        with TransformListener(buffer, core.address, keys=keys) as listener, \
                TransformBroadcaster(core.address, keys=keys) as b:
            wait_until(lambda: b.send_transform(make_transform("world", "probe", stamp=1)) or
                 buffer.can_transform("world", "probe", 0))
            time.sleep(0.2)
            start = listener.stats()["received_transforms"]
            ts = [make_transform("world", f"c{i % 100}", stamp=1 + i) for i in range(n)]
            cpu0 = time.process_time() + cpu_seconds(core.pid)
            t0 = time.perf_counter()
            for i, t in enumerate(ts):
                b.send_transform(t)
                if i % 200 == 199:
                    # pace to what the listener keeps up with (at most 400 in flight)
                    wait_until(lambda: listener.stats()["received_transforms"] - start >= i - 400,
                         0.5, 0.0002)
            wait_until(lambda: listener.stats()["received_transforms"] - start >= n, 10, 0.001)
            elapsed = time.perf_counter() - t0
            cpu = time.process_time() + cpu_seconds(core.pid) - cpu0
            got = listener.stats()["received_transforms"] - start
        return got / elapsed, cpu / max(got, 1) * 1e6, n - got
    finally:
        core.close()


def round_trips(keys, n: int):
    from tf2py.server.client import BufferClient
    from tf2py.server.server import BufferServer

    buffer = Buffer()
    buffer.set_transform(make_transform("map", "base", (1, 0, 0), stamp=1), "bench")
    with BufferServer(buffer, "tcp://127.0.0.1:0", keys=keys) as server, \
            BufferClient(server.address, keys=keys) as client:
        for _ in range(200):
            client.lookup_transform("map", "base", 0)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            client.lookup_transform("map", "base", 0)
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] * 1e6, times[int(len(times) * 0.99)] * 1e6


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench faults_bus",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the issue's figures exactly")
    parser.add_argument("sections", nargs="*", metavar="campaign|keys",
                        help="what to run (default: both)")
    args = parser.parse_args(argv)
    sections = args.sections or ["campaign", "keys"]
    if set(sections) - {"campaign", "keys"}:
        parser.error("sections are: campaign, keys")
    full, quick = args.full, run.quick and not args.full
    tmp = tempfile.mkdtemp(prefix="tf2py-bench-keys-")
    site = create_site(os.path.join(tmp, "site"))
    foreign = create_site(os.path.join(tmp, "foreign"))
    add_identity(site, "guest")

    if "campaign" in sections:
        print("attack campaign:", flush=True)
        if quick:  # every attack class, small: a smoke run
            replay_storm(5_000, 10, watch=1.0)
            frozen_listener(2.0)
            garbage_and_long_ids(500, 10)
            invalid_statics(20)
            dead_publishers(1)
            oversized_sends()
            strangers(site, foreign, 0.5)
        else:
            replay_storm(100_000, 100)
            frozen_listener(30.0 if full else 10.0)
            garbage_and_long_ids(20_000 if full else 5_000, 100 if full else 30)
            invalid_statics(200)
            dead_publishers(3)
            oversized_sends()
            strangers(site, foreign, 2.0)
        table = run.table("bus attack classes", ["attack class", "tried", "crashes", "lost",
                                                 "core MiB (start->peak)", "listener MiB", "bound",
                                                 "note"], [60, 7, 8, 5, 23, 13, 18, 10])
        for r in ROWS:
            table.add(*r, tried=r[1], crashes=r[2], lost=r[3])
        run.note(f"Bounds: per subscriber {SUB_BOUND_MB:.0f} MiB "
                 f"({core_module.SUBSCRIBER_HWM} messages of <= {core_module.PIECE_BYTES // 1024} "
                 f"KiB; a subscriber taking no data is cut after "
                 f"{core_module.STALL_CUT_MS / 1000:.0f} s), latched statics "
                 f"{core_module.LATCHED_BYTES // MB} MiB; listener queue 8192 messages = 128 MiB.")
    if "keys" in sections:
        print("\ncost of keys:", flush=True)
        # plain and CURVE alternate, twice each; the better run of each is kept
        n = 2_000 if quick else 50_000 if full else 20_000
        m = 200 if quick else 3000 if full else 1500
        runs: dict[str | None, list[tuple[float, float, int]]] = {None: [], "curve": []}
        trips: dict[str | None, list[tuple[float, float]]] = {None: [], "curve": []}
        for _ in range(1 if quick else 2):
            for k in (None, "curve"):
                runs[k].append(ingest(site if k else None, n))
                trips[k].append(round_trips(site if k else None, m))
        plain_rate, plain_cpu, plain_lost = max(runs[None])
        curve_rate, curve_cpu, curve_lost = max(runs["curve"])
        plain_p50, plain_p99 = min(trips[None])
        curve_p50, curve_p99 = min(trips["curve"])
        keys = run.table(f"cost of keys (best of {1 if quick else 2} alternating runs each)",
                         ["keys", "bus ingest, transforms/s (single, paced)",
                          "CPU µs per transform (sender + core + listener)", "lost",
                          "server round trip p50 / p99 µs"], [6, 42, 48, 5, 30])
        keys.add("plain", f"{plain_rate:,.0f}", f"{plain_cpu:.1f}", plain_lost,
                 f"{plain_p50:.0f} / {plain_p99:.0f}", rate=plain_rate, cpu_us=plain_cpu,
                 p50_us=plain_p50, p99_us=plain_p99)
        keys.add("CURVE", f"{curve_rate:,.0f}", f"{curve_cpu:.1f}", curve_lost,
                 f"{curve_p50:.0f} / {curve_p99:.0f}", rate=curve_rate, cpu_us=curve_cpu,
                 p50_us=curve_p50, p99_us=curve_p99)
        keys.add("ratio", f"{curve_rate / plain_rate:.2f}x", f"{curve_cpu / plain_cpu:.2f}x", "",
                 f"{curve_p50 / plain_p50:.2f}x / {curve_p99 / plain_p99:.2f}x")

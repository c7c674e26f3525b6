"""Benchmark of the buffer server: one command, prints figures and ratios.

    python -m bench server [--duration 3] [--goals 1000000] [--clients 1,10,50]

1. Throughput and latency with 1, 10 and 50 concurrent clients (each a process with its own
   BufferClient doing blocking lookup_transform calls back to back), against the floor: a
   plain ZeroMQ DEALER/ROUTER echo (Python, pyzmq) with the same message sizes (a goal out, a
   result back), the same number of client processes, in the same run.
2. Enabling-insertion-to-answer latency: a client waits (blocking lookup with a timeout) for a
   frame the server's buffer does not have; the server process inserts it; the time from just
   before the insertion call to the client having its answer (CLOCK_MONOTONIC, shared by the
   processes).
3. Server memory over 1 000 000 goals (answerable, errors, goals that wait and time out, goals
   that wait and are cancelled), RSS sampled along the way.

The server runs in its own process (as ``tf2py server`` does), its buffer filled with
map -> odom -> base_link (dynamic, 100 samples each) -> laser (static).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import threading
import time

from bench.harness import Run, cpu_seconds, percentile, status_kib

LOOKUP = ("map", "laser", 50.25)  # between samples on both dynamic links: interpolation


def _rss_kib(pid: int | str = "self") -> int:
    return status_kib(pid, "VmRSS")


def _percentile(values, q):
    """The q-quantile (0..1) of latencies, the harness's percentile."""
    return percentile(values, 100 * q)


# --- the server process ---------------------------------------------------------------------


def _fill(buffer):
    from tf2py import make_transform

    for i in range(100):
        stamp = float(i)
        buffer.set_transform(make_transform("map", "odom", (i * 0.1, 0, 0), rpy=(0, 0, i * 0.01),
                                            stamp=stamp), "bench")
        buffer.set_transform(make_transform("odom", "base_link", (0, i * 0.1, 0),
                                            rpy=(0, 0, -i * 0.01), stamp=stamp), "bench")
    buffer.set_transform_static(make_transform("base_link", "laser", (0.2, 0, 0.3)), "bench")


def server_process(conn):
    """Runs a BufferServer; obeys commands from ``conn``: pending, insert NAME, rss, stop."""
    from tf2py import Buffer, make_transform
    from tf2py.server.server import BufferServer

    buffer = Buffer(cache_time=120.0)
    _fill(buffer)
    with BufferServer(buffer, "tcp://127.0.0.1:0") as server:
        conn.send(server.address)
        while True:
            command, arg = conn.recv()
            if command == "pending":
                conn.send(server.pending_count)
            elif command == "insert":
                transform = make_transform("laser", arg, (0, 0, 1))
                started = time.monotonic_ns()
                buffer.set_transform_static(transform, "bench")
                conn.send(started)
            elif command == "rss":
                conn.send((_rss_kib(), server.stats()))
            elif command == "stop":
                conn.send(None)
                return


def echo_process(conn, reply_size):
    """A plain ZeroMQ ROUTER echo in Python: answers every request with ``reply_size`` bytes."""
    import zmq

    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    stop = context.socket(zmq.PAIR)
    stop.bind("inproc://stop")
    reply = b"r" * reply_size
    running = [True]

    def loop():
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(stop, zmq.POLLIN)
        while running[0]:
            events = dict(poller.poll())
            if stop in events:
                return
            for _ in range(256):
                try:
                    identity, _ = router.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                router.send_multipart((identity, reply))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    conn.send(f"tcp://127.0.0.1:{port}")
    conn.recv()
    signal = context.socket(zmq.PAIR)
    signal.connect("inproc://stop")
    signal.send(b"")
    thread.join()
    for s in (router, stop, signal):
        s.close(linger=0)
    context.term()
    conn.send(None)


# --- client processes -----------------------------------------------------------------------


def lookup_client(address, barrier, duration, results, interval=0.0):
    """Blocking lookups back to back, or one every ``interval`` seconds (paced)."""
    from tf2py.server.client import BufferClient

    with BufferClient(address) as client:
        for _ in range(50):
            client.lookup_transform(*LOOKUP)
        barrier.wait()
        cpu0 = time.process_time()
        latencies = []
        now = time.perf_counter_ns
        end = now() + int(duration * 1e9)
        lookup = client.lookup_transform
        step = int(interval * 1e9)
        next_start = now() + (os.getpid() % 97) * step // 97  # spread the paced clients
        while True:
            if step:
                pause = next_start - now()
                if pause > 0:
                    time.sleep(pause / 1e9)
                next_start += step
            start = now()
            if start >= end:
                break
            lookup(*LOOKUP)
            latencies.append(now() - start)
        cpu = time.process_time()
    results.put((latencies, cpu - cpu0))


def echo_client(address, request_size, barrier, duration, results):
    import zmq

    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.connect(address)
    request = b"g" * request_size
    for _ in range(50):
        dealer.send(request)
        dealer.recv()
    barrier.wait()
    cpu0 = time.process_time()
    latencies = []
    now = time.perf_counter_ns
    end = now() + int(duration * 1e9)
    while True:
        start = now()
        if start >= end:
            break
        dealer.send(request)
        dealer.recv()
        latencies.append(now() - start)
    cpu = time.process_time() - cpu0
    dealer.close(linger=0)
    context.term()
    results.put((latencies, cpu))


def goal_flood_client(address, count, window, progress, seed):
    """Raw protocol client for the memory run: ``count`` goals, ``window`` in flight."""
    import zmq

    from tf2py.server import protocol
    from tf2py.transport.wire import unpack

    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.connect(address)
    t_ns = int(LOOKUP[2] * 1e9)
    sent = done = 0
    in_flight = 0
    cancel_ids = set()
    while done < count:
        while in_flight < window and sent < count:
            goal_id = sent
            kind = goal_id % 100
            if kind < 90:  # answerable at once
                payload = protocol.pack_goal(goal_id, "map", "laser", t_ns, 0, "", False, 0)
            elif kind < 95:  # an error at once
                payload = protocol.pack_goal(goal_id, "map", f"ghost_{seed}_{goal_id}", 0, 0,
                                             "", False, 0)
            elif kind < 99:  # waits, answered with the error at its 1 ms timeout
                payload = protocol.pack_goal(goal_id, "map", f"ghost_{seed}_{goal_id}", 0, 0,
                                             "", False, 1_000_000)
            else:  # waits, then cancelled
                payload = protocol.pack_goal(goal_id, "map", f"ghost_{seed}_{goal_id}", 0, 0,
                                             "", False, 60_000_000_000)
                cancel_ids.add(goal_id)
            dealer.send(payload)
            if goal_id in cancel_ids:
                dealer.send(protocol.pack_cancel(goal_id))
            sent += 1
            in_flight += 1
        message = unpack(dealer.recv())
        kind, goal_id = message[1], message[2]
        if kind == "result" or kind == "cancelled":
            cancel_ids.discard(goal_id)
            done += 1
            in_flight -= 1
            if done % 1000 == 0:
                with progress.get_lock():
                    progress.value += 1000
    dealer.close(linger=0)
    context.term()


# --- the runs -------------------------------------------------------------------------------


def _run_clients(ctx, target, args_of, n, duration, server_pid):
    barrier = ctx.Barrier(n + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=args_of(barrier, results), daemon=True)
             for _ in range(n)]
    for p in procs:
        p.start()
    barrier.wait(timeout=120)
    server_cpu0 = cpu_seconds(server_pid)
    started = time.perf_counter()
    latencies = []
    client_cpu = 0.0
    for _ in procs:
        got, cpu = results.get(timeout=duration + 120)
        latencies.extend(got)
        client_cpu += cpu
    server_cpu = cpu_seconds(server_pid) - server_cpu0
    for p in procs:
        p.join(timeout=30)
    elapsed = max(duration, time.perf_counter() - started - 0.0)
    latencies.sort()
    return {
        "rate": len(latencies) / duration,
        "p50_ms": _percentile(latencies, 0.50) / 1e6,
        "p99_ms": _percentile(latencies, 0.99) / 1e6,
        "n": len(latencies),
        "server_cpu_us": server_cpu / max(1, len(latencies)) * 1e6,
        "client_cpu_us": client_cpu / max(1, len(latencies)) * 1e6,
        "elapsed": elapsed,
    }


def throughput(ctx, server_address, server_pid, echo_address, echo_pid, sizes, client_counts,
               duration):
    rows = []
    for n in client_counts:
        echo = _run_clients(
            ctx, echo_client, lambda b, r: (echo_address, sizes[0], b, duration, r), n, duration,
            echo_pid)
        served = _run_clients(
            ctx, lookup_client, lambda b, r: (server_address, b, duration, r), n, duration,
            server_pid)
        rows.append((n, served, echo))
        print(
            f"  {n:3d} clients: server {served['rate']:8.0f} lookups/s  p50 {served['p50_ms']:6.3f} ms"
            f"  p99 {served['p99_ms']:6.3f} ms | echo floor {echo['rate']:8.0f}/s"
            f"  p50 {echo['p50_ms']:6.3f} ms  p99 {echo['p99_ms']:6.3f} ms"
            f" | ratio rate {served['rate'] / echo['rate']:.2f}"
            f"  p50 x{served['p50_ms'] / echo['p50_ms']:.2f}  p99 x{served['p99_ms'] / echo['p99_ms']:.2f}",
            flush=True,
        )
        print(
            f"               CPU per lookup: server {served['server_cpu_us']:.0f} us, clients "
            f"{served['client_cpu_us']:.0f} us | echo: server {echo['server_cpu_us']:.0f} us, "
            f"clients {echo['client_cpu_us']:.0f} us",
            flush=True,
        )
    return rows


def paced(ctx, server_address, server_pid, n, rate, duration):
    """``n`` clients, each doing ``rate`` lookups per second: latency when the server is not
    saturated (many processes needing a transform now and then)."""
    served = _run_clients(
        ctx, lookup_client, lambda b, r: (server_address, b, duration, r, 1.0 / rate), n,
        duration, server_pid)
    print(
        f"  {n:3d} clients at {rate:g} lookups/s each ({n * rate:g}/s offered): "
        f"{served['rate']:.0f} lookups/s  p50 {served['p50_ms']:.3f} ms  p99 {served['p99_ms']:.3f} ms",
        flush=True,
    )
    return served


def insertion_latency(conn, address, samples):
    from tf2py.server.client import BufferClient

    def pending():
        conn.send(("pending", None))
        return conn.recv()

    latencies = []
    with BufferClient(address) as client:
        client.lookup_transform(*LOOKUP)
        for i in range(samples):
            frame = f"enabled_{i}"
            answered = []

            def wait():
                client.lookup_transform("map", frame, 0, timeout=30.0)
                answered.append(time.monotonic_ns())

            thread = threading.Thread(target=wait)
            thread.start()
            deadline = time.monotonic() + 30
            while pending() != 1:
                if time.monotonic() > deadline:
                    raise RuntimeError("the goal never reached the server")
                time.sleep(0.0005)
            time.sleep(0.002)  # let the client settle back into its poll
            conn.send(("insert", frame))
            inserted = conn.recv()
            thread.join(timeout=30)
            latencies.append(answered[0] - inserted)
    latencies.sort()
    return latencies


def memory(conn, address, ctx, goals, clients=4, window=64):
    progress = ctx.Value("q", 0)
    per_client = goals // clients
    procs = [ctx.Process(target=goal_flood_client,
                         args=(address, per_client, window, progress, i), daemon=True)
             for i in range(clients)]

    def rss():
        conn.send(("rss", None))
        return conn.recv()

    samples = [(0, rss()[0])]
    started = time.perf_counter()
    for p in procs:
        p.start()
    step = max(goals // 10, 1)
    next_mark = step
    while any(p.is_alive() for p in procs):
        time.sleep(0.05)
        done = progress.value
        if done >= next_mark:
            samples.append((done, rss()[0]))
            next_mark += step
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - started
    final_rss, stats = rss()
    samples.append((progress.value, final_rss))
    return samples, stats, elapsed


def main(run: Run, argv: list[str]) -> None:
    quick = run.quick
    parser = argparse.ArgumentParser(prog="python -m bench server",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=0.5 if quick else 3.0,
                        help="seconds per throughput run")
    parser.add_argument("--clients", default="1,10" if quick else "1,10,50",
                        help="client counts, comma-separated")
    parser.add_argument("--paced", default="10:100" if quick else "50:100",
                        help="CLIENTS:RATE for the paced run (each client RATE lookups/s); "
                        "empty to skip")
    parser.add_argument("--goals", type=int, default=20_000 if quick else 1_000_000,
                        help="goals in the memory run")
    parser.add_argument("--samples", type=int, default=30 if quick else 300,
                        help="insertion-latency samples")
    args = parser.parse_args(argv)
    client_counts = [int(x) for x in args.clients.split(",") if x]

    from tf2py import make_transform
    from tf2py.server import protocol

    goal_size = len(protocol.pack_goal(1_000_000, *LOOKUP[:2], int(LOOKUP[2] * 1e9), 0, "",
                                       False, 0))
    result_size = len(protocol.pack_result(1_000_000, make_transform(
        "map", "laser", (1.23456789, 2.3456789, 0.3), rpy=(0.1, 0.2, 0.3), stamp=LOOKUP[2])))

    ctx = mp.get_context("spawn")
    server_conn, child = ctx.Pipe()
    server = ctx.Process(target=server_process, args=(child,), daemon=True)
    server.start()
    address = server_conn.recv()
    echo_conn, echo_child = ctx.Pipe()
    echo = ctx.Process(target=echo_process, args=(echo_child, result_size), daemon=True)
    echo.start()
    echo_address = echo_conn.recv()

    print(f"bench_server: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"Python {sys.version.split()[0]}; goal {goal_size} B, result {result_size} B")
    print(f"throughput ({args.duration:g} s per run, blocking lookup_transform back to back):")
    rows = throughput(ctx, address, server.pid, echo_address, echo.pid, (goal_size, result_size),
                      client_counts, args.duration)
    table = run.table(f"buffer server: blocking lookup_transform back to back, {args.duration:g} s "
                      "per run, against an echo server (the floor: same sizes, no store)",
                      ["clients", "lookups/s", "p50 ms", "p99 ms", "echo /s", "echo p50 ms",
                       "echo p99 ms", "server CPU µs/lookup"], [8, 10, 8, 8, 9, 12, 12, 20])
    for n, served, floor in rows:
        table.add(n, f"{served['rate']:.0f}", f"{served['p50_ms']:.3f}", f"{served['p99_ms']:.3f}",
                  f"{floor['rate']:.0f}", f"{floor['p50_ms']:.3f}", f"{floor['p99_ms']:.3f}",
                  f"{served['server_cpu_us']:.0f}", clients=n, rate=served["rate"],
                  p50_ms=served["p50_ms"], p99_ms=served["p99_ms"], echo_rate=floor["rate"])

    if args.paced:
        n, rate = args.paced.split(":")
        print("paced (not saturating):")
        served = paced(ctx, address, server.pid, int(n), float(rate), args.duration)
        table.add(f"{n} paced at {float(rate):g}/s", f"{served['rate']:.0f}",
                  f"{served['p50_ms']:.3f}", f"{served['p99_ms']:.3f}", "", "", "",
                  f"{served['server_cpu_us']:.0f}", rate=served["rate"], p50_ms=served["p50_ms"],
                  p99_ms=served["p99_ms"])

    latencies = insertion_latency(server_conn, address, args.samples)
    print(f"enabling insertion -> client has the answer ({len(latencies)} samples): "
          f"p50 {_percentile(latencies, 0.5) / 1e6:.3f} ms  p99 {_percentile(latencies, 0.99) / 1e6:.3f} ms"
          f"  max {latencies[-1] / 1e6:.3f} ms  (tf2's server polls every 10 ms)", flush=True)

    if args.goals:
        samples, stats, elapsed = memory(server_conn, address, ctx, args.goals)
        print(f"server memory over {samples[-1][0]:,} goals ({elapsed:.1f} s, "
              f"{samples[-1][0] / elapsed:,.0f} goals/s pipelined; waited {stats['waited']:,}, "
              f"cancelled {stats['cancelled']:,}, answered at timeout "
              f"{stats['answered_at_timeout']:,}, pending at end {stats['pending']}):")
        print("  " + "  ".join(f"{done // 1000}k:{kib / 1024:.1f}MB" for done, kib in samples))
        after_warmup = [kib for done, kib in samples if done >= samples[-1][0] // 10]
        if after_warmup:
            print(f"  RSS growth from 10% to 100% of the goals: "
                  f"{(after_warmup[-1] - after_warmup[0]) / 1024:+.1f} MB")

    server_conn.send(("stop", None))
    server_conn.recv()
    server.join(timeout=10)
    echo_conn.send(None)
    echo_conn.recv()
    echo.join(timeout=10)


"""Fault campaign of the buffer server and the tools: one command, a bounded run of each attack
class, a table of inputs tried, crashes (must be 0), valid transforms lost (must be 0), and the
server's peak memory against its bound; then the server's answer staleness with 10 000 waiting
goals on a 100 Hz frame, against the same server without them, in the same run.

    .venv/bin/python bench/bench_faults.py [--quick]

The bus (`tf2py core`) and the server (`tf2py server`) run as real subprocesses; this process
broadcasts a 100 Hz frame and plays the attackers and the well-behaved clients. A crash is a
subprocess that exits, or an exception other than the documented error type (BufferServer:
none reaches the caller but tf2's and TimeoutException; bags: BagError; launch files:
LaunchFileError; command-line numbers: CommandError). Valid transforms lost: the 100 Hz frame's
samples sent during the campaign that the server's buffer does not hold at the end (looked up
through the server, one by one, at their own stamps).

If bench/bench_faults_bus.py is present (the bus's own campaign), it runs afterwards.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import zmq  # noqa: E402

from tf2py import Buffer, TransformBroadcaster, make_transform  # noqa: E402
from tf2py.buffer.exceptions import (  # noqa: E402
    INVALID_ARGUMENT_ERROR,
    TimeoutException,
    TransformException,
)
from tf2py.server import protocol  # noqa: E402
from tf2py.server.client import BufferClient  # noqa: E402
from tf2py.server.server import (  # noqa: E402
    MAX_GOAL_TIMEOUT,
    MAX_WAITING_GOALS,
    MAX_WAITING_GOALS_PER_CLIENT,
)
from tf2py.transport.wire import pack  # noqa: E402

PY = sys.executable


def _hwm_kib(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _rss_kib(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _cpu_percent(pid, seconds: float) -> float:
    """The process's CPU use (user + system, % of one core) over ``seconds``."""
    def ticks():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    hz = os.sysconf("SC_CLK_TCK")
    before, t0 = ticks(), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (ticks() - before) / hz / (time.monotonic() - t0)


def _pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


class _Proc:
    def __init__(self, args, ready, root=ROOT):
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(root))
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=env, stdin=subprocess.DEVNULL,
                                      cwd=str(root))  # `-m` imports from the cwd first
        self.lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.popen.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if ready in line:
                self.address = line.split(ready, 1)[1].strip()
                threading.Thread(target=self._drain, daemon=True).start()
                return
        raise RuntimeError(f"{args} did not start: {''.join(self.lines)}")

    def _drain(self):
        for line in self.popen.stdout:
            self.lines.append(line)

    def alive(self):
        return self.popen.poll() is None

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class _Stream:
    """map -> base (100 Hz, stamped with the wall clock), plus a static base -> laser; keeps
    every (stamp, wall time sent)."""

    def __init__(self, core):
        self.broadcaster = TransformBroadcaster(core=core)
        self.sent = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        k = 0
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            stamp = time.time()
            self.broadcaster.send_transform(
                make_transform("map", "base", (k * 0.01, 0, 0), stamp=stamp))
            self.sent.append((stamp, time.time()))
            k += 1
            next_t += 0.01
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()

    def close(self):
        self.stop_event.set()
        self.thread.join()
        self.broadcaster.close()


class _Row:
    def __init__(self, name):
        self.name = name
        self.tried = 0
        self.crashes = 0
        self.lost = 0
        self.note = ""


def _dealer(address):
    ctx = zmq.Context.instance()
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.setsockopt(zmq.RCVTIMEO, 20_000)
    d.connect(address)
    return d


def _results(dealer, count):
    out = []
    while len(out) < count:
        message = protocol.parse_server_message(dealer.recv())
        if message[0] == "result":
            out.append(message)
    return out


# --- attack classes on the server ------------------------------------------------------------


def attack_goal_flood(server, n_extra):
    """One client: its limit of waiting goals, then n_extra more (refused, INVALID_ARGUMENT)."""
    row = _Row("goal flood (one client)")
    d = _dealer(server.address)
    limit = MAX_WAITING_GOALS_PER_CLIENT
    for i in range(limit + n_extra):
        d.send(protocol.pack_goal(i, "map", f"flood_{i}", 0, 0, "", False, 60_000_000_000))
    refused = sum(1 for r in _results(d, n_extra) if r[2][0] == INVALID_ARGUMENT_ERROR)
    row.tried = limit + n_extra
    row.crashes = 0 if server.alive() else 1
    row.note = f"{refused}/{n_extra} over the limit refused"
    d.close()  # its goals go with its connection
    return row


def attack_timeouts(server, n):
    row = _Row("huge / negative timeouts")
    d = _dealer(server.address)
    rng = random.Random(1)
    limit_ns = int(MAX_GOAL_TIMEOUT * 1e9)
    for i in range(n):
        timeout = rng.choice([2**63 - 1, -(2**63), limit_ns + 1, limit_ns, 0, -1,
                              rng.randrange(-(2**63), 2**63)])
        d.send(protocol.pack_goal(i, "map", "never", 0, 0, "", False, timeout))
    answers = 0
    deadline = time.monotonic() + 20
    while answers < n and time.monotonic() < deadline:
        try:
            message = protocol.parse_server_message(d.recv(zmq.NOBLOCK))
        except zmq.Again:
            time.sleep(0.005)
            continue
        if message[0] in ("result", "accepted"):
            answers += 1
    d.close()
    row.tried = n
    row.crashes = 0 if server.alive() else 1
    row.note = f"{answers} answered (refused, at once, or accepted within the limit)"
    return row


def attack_garbage(server, n):
    row = _Row("malformed / mutated goals")
    d = _dealer(server.address)
    rng = random.Random(2)
    good = protocol.pack_goal(1, "map", "base", 0, 0, "", False, 0)
    for i in range(n):
        kind = i % 4
        if kind == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        elif kind == 1:
            b = bytearray(good)
            for _ in range(rng.randrange(1, 6)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            data = bytes(b)
        elif kind == 2:
            data = pack([1, "goal", i, rng.random(), None, "x" * rng.randrange(0, 5000), 0, "",
                         False, 0])
        else:
            data = good[: rng.randrange(1, len(good))]
        d.send(data)
    d.send(protocol.pack_goal(99_999, "map", "base", 0, 0, "", False, 0))
    ok = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            message = protocol.parse_server_message(d.recv())
        except (zmq.Again, protocol.ProtocolError):
            continue
        if message[0] == "result" and message[1] == 99_999:
            ok = message[2][0] == 0
            break
    d.close()
    row.tried = n
    row.crashes = 0 if server.alive() and ok else 1
    row.note = "a valid goal after them answered" if ok else "valid goal NOT answered"
    return row


_KILLED = textwrap.dedent("""
    import sys, time, zmq
    from tf2py.server import protocol
    d = zmq.Context().socket(zmq.DEALER)
    d.connect(sys.argv[1])
    for i in range(int(sys.argv[2])):
        d.send(protocol.pack_goal(i, "map", "gone_%d" % i, 0, 0, "", False, 600_000_000_000))
    for i in range(int(sys.argv[2])):
        d.recv()
    print("sent", flush=True)
    time.sleep(600)
""")


def attack_killed_clients(clients, goals):
    """Against an in-process BufferServer (its goal count is readable): client processes
    with waiting goals are SIGKILLed; their goals must go at once, not at their timeouts."""
    from tf2py.server.server import BufferServer

    row = _Row("clients SIGKILLed with waiting goals (in-process server)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    buffer = Buffer()
    with BufferServer(buffer, "tcp://127.0.0.1:0") as local:
        procs = [subprocess.Popen([PY, "-c", _KILLED, local.address, str(goals)],
                                  stdout=subprocess.PIPE, text=True, env=env)
                 for _ in range(clients)]
        for p in procs:
            p.stdout.readline()
        held = local.pending_count
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
        started = time.monotonic()
        while time.monotonic() - started < 30 and local.pending_count:
            time.sleep(0.01)
        row.tried = clients * goals
        row.crashes = local.pending_count  # goals left behind count as failures
        row.note = (f"{held} waiting goals dropped {time.monotonic() - started:.2f} s after "
                    "the kills (their timeouts: 600 s)")
    return row


class _Forger:
    def __init__(self):
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.address = f"tcp://127.0.0.1:{port}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        from tf2py.transport.wire import transform_to_wire, unpack

        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        while not self.stop.is_set():
            if not poller.poll(50):
                continue
            identity, data = self.router.recv_multipart()
            m = unpack(data)
            if m[1] != "goal":
                continue  # cancels
            forged = make_transform("evil_parent", "evil_child", (666, 0, 0), stamp=m[5] / 1e9)
            self.router.send_multipart([identity, pack([1, "result", m[2], 0, "", "",
                                                        transform_to_wire(forged)])])

    def close(self):
        self.stop.set()
        self.thread.join()
        self.router.close()
        self.ctx.term()


def attack_forged_answers(n):
    row = _Row("forged answers (a stranger as server)")
    forger = _Forger()
    accepted = 0
    with BufferClient(forger.address, timeout_padding=0.05) as client:
        for _ in range(n):
            try:
                client.lookup_transform("map", "base_link", 0)
                accepted += 1
            except TimeoutException:
                pass
        refused = client.refused_answers
    forger.close()
    row.tried = n
    row.crashes = accepted  # an accepted forged answer counts as a failure
    row.note = f"{refused} refused, {accepted} accepted"
    return row


# --- attack classes on the tools -------------------------------------------------------------


def attack_bags(n):
    from tf2py.bag import BagError, load

    row = _Row("bad bags (bag.load)")
    rng = random.Random(3)
    data_dir = ROOT.parent / "shared" / "data"
    mcap = (data_dir / "nav2_turtlebot.mcap").read_bytes() if data_dir.exists() else b""
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "fifo"
        os.mkfifo(fifo)
        for i in range(n):
            path = Path(tmp) / f"bag{i}{rng.choice(['', '.bag', '.mcap', '.db3'])}"
            kind = i % 5
            if kind == 0:
                path = fifo
            elif kind == 1 and mcap:
                path.write_bytes(mcap[: rng.randrange(1, len(mcap))])
            elif kind == 2 and mcap:
                b = bytearray(mcap)
                for _ in range(20):
                    b[rng.randrange(len(b))] = rng.randrange(256)
                path.write_bytes(bytes(b))
            elif kind == 3:
                path.write_bytes(rng.choice([b"\x89MCAP0\r\n", b"#ROSBAG V2.0\n",
                                             b"SQLite format 3\x00"])
                                 + bytes(rng.randrange(256) for _ in range(rng.randrange(500))))
            else:
                path.write_bytes(mcap)  # a valid bag under another name: must load
            try:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    load(path, strict=bool(i % 2))
            except BagError:
                if kind == 4:
                    row.lost += 1
            except Exception:  # noqa: BLE001 - anything else is a crash
                row.crashes += 1
            row.tried += 1
    row.note = "valid bags under other names all loaded" if not row.lost else ""
    return row


def attack_launch_files(n):
    from tf2py.cli.launch_file import LaunchFileError, load

    row = _Row("bad launch files")
    rng = random.Random(4)
    pieces = ["launch:", "- process:", "cmd:", "$(var x)", "$(env", "{", "}", "[", "]", ":",
              "  ", "\n", "- arg: {name: x, default: 'a b'}", "name:", "'", '"', "\x00", "é"]
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "fifo.yaml"
        os.mkfifo(fifo)
        for i in range(n):
            if i % 10 == 0:
                path = rng.choice([str(fifo), "/dev/zero", "/dev/null"])
            else:
                path = str(Path(tmp) / f"f{i}.yaml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(" ".join(rng.choice(pieces) for _ in range(rng.randrange(1, 40))))
            try:
                load(path, {"x": "1"})
            except LaunchFileError:
                pass
            except Exception:  # noqa: BLE001
                row.crashes += 1
            row.tried += 1
    return row


def attack_numbers(n):
    from tf2py.cli.common import CommandError
    from tf2py.cli.main import build_parser
    from tf2py.cli.static_transform_publisher import parse

    row = _Row("bad numbers (static-transform-publisher)")
    rng = random.Random(5)
    parser, _ = build_parser()
    words = ["1e308", "-1e308", "1e309", "-inf", "inf", "nan", "1_0", "0x10", "", "-", "1e-320",
             "0", "--", "١", "1.5", "-0"]
    for i in range(n):
        argv = ["static-transform-publisher", "--frame-id", "a", "--child-frame-id", "b"]
        for flag in rng.sample(["x", "y", "z", "qx", "qy", "qz", "qw"], rng.randrange(1, 5)):
            argv += [f"--{flag}", rng.choice(words)]
        try:
            args, extra = parser.parse_known_args(argv)
            _, _, t, q = parse(args)
            if any(c != c for c in (*t, *q)) or abs(sum(c * c for c in q) - 1) > 1e-9:
                row.crashes += 1  # a NaN or a non-unit quaternion published
        except (CommandError, SystemExit):
            pass
        except Exception:  # noqa: BLE001
            row.crashes += 1
        row.tried += 1
    return row


# --- staleness with 10 000 waiting goals ------------------------------------------------------


def staleness(server, stream, probes, waiting_clients):
    """Answer staleness (bus sample sent -> answer received, for goals waiting for that
    sample's stamp) and p99 of an answerable lookup, while ``waiting_clients`` hold goals.
    A probe not answered within its 5 s timeout counts as 5000 ms (a lower bound); after 3
    of those the rest are skipped."""
    client = BufferClient(server.address, timeout_padding=5.0)
    stale = []
    missed = 0
    try:
        client.lookup_transform("map", "base", 0, timeout=5.0)
        for _ in range(5):  # warm-up, not counted
            wanted = time.time() + 0.03
            try:
                client.lookup_transform_async("map", "base", wanted, timeout=5.0).result(10)
            except TransformException:
                pass
        for _ in range(probes):
            wanted = time.time() + 0.03
            future = client.lookup_transform_async("map", "base", wanted, timeout=5.0)
            try:
                answer = future.result(timeout=10)
            except TransformException:
                stale.append(5000.0)
                missed += 1
                if missed >= 3:
                    break
                continue
            got = time.time()
            sent = next(wall for stamp, wall in list(stream.sent) if stamp >= wanted)
            stale.append((got - sent) * 1e3)
            if answer.child_frame_id != "base":
                raise RuntimeError(f"wrong answer {answer}")
        latency = []
        for _ in range(probes * 3):
            t0 = time.perf_counter()
            client.lookup_transform("map", "laser", 0)
            latency.append((time.perf_counter() - t0) * 1e3)
    finally:
        client.close()
    return stale, latency


STALE_FRAMES = 1000


def hold_waiting_goals(address, count):
    """``count`` goals waiting on the 100 Hz frame, a third of each kind: for times far ahead
    of the data (timed, all distinct), untimed towards a frame of another tree
    (ConnectivityException), and untimed towards one of STALE_FRAMES frames whose only
    sample is older than the 100 Hz frame's oldest (backward extrapolation at the latest
    common time: distinct lookups that a naive server re-checks on every 100 Hz sample)."""
    per = MAX_WAITING_GOALS_PER_CLIENT // 2
    dealers = []
    far = int((time.time() + 10**6) * 1e9)
    for start in range(0, count, per):
        d = _dealer(address)
        for i in range(start, min(count, start + per)):
            if i % 3 == 0:
                d.send(protocol.pack_goal(i, "map", "base", far + i, 0, "", False,
                                          int(600e9)))
            elif i % 3 == 1:
                d.send(protocol.pack_goal(i, "base", "island", 0, 0, "", False, int(600e9)))
            else:
                d.send(protocol.pack_goal(i, "base", f"stale_{i % STALE_FRAMES}", 0, 0, "",
                                          False, int(600e9)))
        dealers.append(d)
    for j, d in enumerate(dealers):
        expected = min(count, (j + 1) * per) - j * per
        n = 0
        while n < expected:
            message = protocol.parse_server_message(d.recv())
            if message[0] == "result":
                raise RuntimeError(f"a goal meant to wait was answered: {message}")
            n += message[0] == "accepted"
    return dealers


def lost_transforms(server, stream, first, last):
    """Samples of the stream sent between ``first`` and ``last`` (wall) that the server's
    buffer does not hold (a lookup at their own stamp gives another translation)."""
    lost = 0
    checked = 0
    with BufferClient(server.address, timeout_padding=5.0) as client:
        for k, (stamp, wall) in enumerate(list(stream.sent)):
            if not first <= wall <= last:
                continue
            checked += 1
            try:
                t = client.lookup_transform("map", "base", stamp)
                if abs(t.transform.translation.x - k * 0.01) > 1e-9:
                    lost += 1
            except TransformException:
                lost += 1
    return lost, checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller campaign (CI smoke)")
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--server-root", default=str(ROOT),
                        help="run `tf2py server` from this source tree (e.g. an export of an "
                        "older commit, to compare; with --staleness-only)")
    parser.add_argument("--staleness-only", action="store_true",
                        help="only the waiting-goals figures (staleness, lookups, CPU)")
    opts = parser.parse_args()
    scale = 0.2 if opts.quick else 1.0

    core = _Proc([PY, "-m", "tf2py.cli.main", "core", "--address", "tcp://127.0.0.1:0"],
                 "ready at ")
    server = _Proc([PY, "-m", "tf2py.cli.main", "server", "--core", core.address,
                    "--address", "tcp://127.0.0.1:0", "--cache-time", "120"], "ready at ",
                   root=opts.server_root)
    from tf2py import StaticTransformBroadcaster

    statics = StaticTransformBroadcaster(core=core.address)
    statics.send_transform([make_transform("base", "laser", (0.1, 0, 0)),
                            make_transform("lonely", "island", (1, 0, 0))])
    stream = _Stream(core.address)
    rows = []
    try:
        with BufferClient(server.address, timeout_padding=5.0) as c:
            c.lookup_transform("map", "laser", 0, timeout=10.0)  # the stream reaches the server
            stale_stamp = time.time() - 60.0  # older than the stream's first sample
            with TransformBroadcaster(core=core.address) as once:
                for _ in range(20):  # a new publisher's first messages may precede its link
                    once.send_transform([make_transform("map", f"stale_{k}", (k, 0, 0),
                                                        stamp=stale_stamp)
                                         for k in range(STALE_FRAMES)])
                    if c.can_transform("map", f"stale_{STALE_FRAMES - 1}", stale_stamp,
                                       timeout=1.0):
                        break
                else:
                    raise RuntimeError("the old frames did not reach the server")
        base_rss = _rss_kib(server.popen.pid)
        campaign_start = time.time()

        # staleness first without, then with the waiting goals
        stale0, lat0 = staleness(server, stream, int(300 * scale) + 20, 0)
        cpu0 = _cpu_percent(server.popen.pid, 3.0)
        dealers = hold_waiting_goals(server.address, opts.waiting)
        cpu1 = _cpu_percent(server.popen.pid, 3.0)
        stale1, lat1 = staleness(server, stream, int(300 * scale) + 20, opts.waiting)

        if not opts.staleness_only:
            rows.append(attack_goal_flood(server, int(2000 * scale)))
            rows.append(attack_timeouts(server, int(2000 * scale)))
            rows.append(attack_garbage(server, int(5000 * scale)))
            rows.append(attack_killed_clients(4, int(2000 * scale)))
            rows.append(attack_forged_answers(int(50 * scale) + 5))
        for d in dealers:
            d.close()
        campaign_end = time.time() - 0.2
        time.sleep(0.3)
        lost, checked = lost_transforms(server, stream, campaign_start, campaign_end)
        server_row = _Row("100 Hz stream during the server attacks")
        server_row.tried = checked
        server_row.lost = lost
        server_row.crashes = 0 if server.alive() and core.alive() else 1
        rows.append(server_row)
        peak = _hwm_kib(server.popen.pid)
        if not opts.staleness_only:
            rows.append(attack_bags(int(200 * scale) + 5))
            rows.append(attack_launch_files(int(1000 * scale)))
            rows.append(attack_numbers(int(2000 * scale)))
    finally:
        stream.close()
        statics.close()
        server.stop()
        core.stop()

    print()
    print(f"{'attack class':56} {'inputs':>8} {'crashes':>8} {'lost':>6}  note")
    for row in rows:
        print(f"{row.name:56} {row.tried:>8} {row.crashes:>8} {row.lost:>6}  {row.note}")
    bound_mib = MAX_WAITING_GOALS * 2 / 1024  # ~2 KiB per waiting goal, all clients together
    print()
    print(f"server peak memory (VmHWM): {peak / 1024:.0f} MiB (after start-up "
          f"{base_rss / 1024:.0f} MiB; bound: start-up + {MAX_WAITING_GOALS} waiting goals "
          f"x ~2 KiB = {base_rss / 1024 + bound_mib:.0f} MiB; per client "
          f"{MAX_WAITING_GOALS_PER_CLIENT} goals; goal timeout <= {MAX_GOAL_TIMEOUT:g} s)")
    print()
    print("answer staleness (100 Hz sample sent on the bus -> waiting goal's answer received):")
    print(f"  without waiting goals: p50 {_pct(stale0, .5):.2f} ms  p99 {_pct(stale0, .99):.2f} ms")
    print(f"  with {opts.waiting} waiting: p50 {_pct(stale1, .5):.2f} ms  "
          f"p99 {_pct(stale1, .99):.2f} ms   (target p99 <= 10 ms)")
    print("answerable lookup for another client (blocking, round trip):")
    print(f"  without waiting goals: p50 {_pct(lat0, .5):.2f} ms  p99 {_pct(lat0, .99):.2f} ms")
    print(f"  with {opts.waiting} waiting: p50 {_pct(lat1, .5):.2f} ms  p99 {_pct(lat1, .99):.2f} ms"
          f"   (target p99 <= 5 ms; ratio p99 {_pct(lat1, .99) / _pct(lat0, .99):.2f})")
    print("server CPU with the 100 Hz stream (3 s): "
          f"{cpu0:.1f} % without waiting goals, "
          f"{cpu1:.1f} % with {opts.waiting} waiting")
    failed = sum(r.crashes for r in rows) + sum(r.lost for r in rows)
    print()
    print("campaign:", "PASS (0 crashes, 0 lost)" if not failed else f"FAIL ({failed})")

    bus = Path(__file__).with_name("bench_faults_bus.py")
    if bus.exists():  # the bus's own campaign (bench_faults_bus.py), when present
        spec = importlib.util.spec_from_file_location("bench_faults_bus", bus)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print()
        print("--- bench_faults_bus.py ---")
        sys.argv = [str(bus)] + (["--quick"] if opts.quick else [])
        module.main()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

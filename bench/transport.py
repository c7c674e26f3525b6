"""Transport benchmarks: ingest rate, latency, fan-out CPU and listener CPU vs a raw floor.

    python -m bench transport                  # everything (~2 min)
    python -m bench transport ingest latency   # some sections
    python -m bench transport --quick          # every section, short (seconds)

Sections:
  ingest   transforms/s from 2 broadcaster PROCESSES through a core PROCESS into one
           TransformListener's Buffer (this process), batches of 1 and 50; flat out (loss
           reported) and paced at a rate the listener keeps up with (must be loss-free).
  latency  send_transform -> available in the listener's Buffer at 1 kHz, p50/p99, vs bare
           pyzmq one-way (PUB->SUB, no core) and bare pyzmq through the core, same run.
  fanout   10 listener processes on one core, 1 broadcaster at 1 kHz x 20 frames (one
           message of 20 transforms per ms): CPU of the core and of each listener.
  floor    CPU per received transform in the listener (real Buffer, and a no-op sink) vs a
           raw pyzmq + msgpack receive-and-decode loop of the same messages (the floor).
"""

from __future__ import annotations

import threading
import time

import msgpack
import numpy as np
import zmq

from bench.harness import (
    PY,
    Child,
    Run,
    Table,
    cpu_seconds,
    load_average,
    percentile,
    start_core,
)
from simulators.bus_processes import BROADCASTER, FANOUT_LISTENER, RAW_PUB
from tf2py.buffer.buffer import Buffer
from tf2py.transport.listener import TransformListener

QUICK = {"on": False}
_TABLE: dict[str, Table] = {}


def _row(section: str, figure: str, value: str, **figures: float) -> None:
    """One figure of a section, printed and kept for the JSON."""
    _TABLE["t"].add(section, figure, value, **figures)


def _spawn(args: list[str]) -> Child:
    """A bus process that talks in turns: lines on stdin, "ready"/"done" on stdout."""
    return Child(args, stdin=True, drain=False)


# -- ingest ----------------------------------------------------------------------------------


def run_ingest(address, batch, count_per_proc, rate, procs=2, core_pid=None):
    buffer = Buffer(cache_time=1e6)
    listener = TransformListener(buffer, address)
    senders = [_spawn([PY, "-c", BROADCASTER, address, str(k), str(count_per_proc), str(batch),
                      str(rate)]) for k in range(procs)]
    try:
        for s in senders:
            s.wait_line("ready")
        expected = procs * count_per_proc * batch
        core0 = cpu_seconds(core_pid) if core_pid else 0.0
        c0 = time.process_time()
        t0 = time.perf_counter()
        for s in senders:
            s.tell()
        last, last_change = 0, time.perf_counter()
        while True:
            time.sleep(0.01)
            n = listener.received_transforms
            now = time.perf_counter()
            if n != last:
                last, last_change = n, now
            if n >= expected or now - last_change > 1.0:
                break
        elapsed = last_change - t0
        cpu = time.process_time() - c0
        core_cpu = (cpu_seconds(core_pid) if core_pid else 0.0) - core0
        for s in senders:
            s.wait_line("done")
        stats = listener.stats()
    finally:
        for s in senders:
            s.stop()
        listener.close()
    received = stats["received_transforms"]
    return dict(batch=batch, rate=rate, expected=expected, received=received,
                loss=1 - received / expected, per_s=received / elapsed, elapsed=elapsed,
                cpu_per_transform_us=cpu / max(received, 1) * 1e6, dropped=stats["dropped"],
                core_us_per_message=core_cpu / max(received / batch, 1) * 1e6)


def section_ingest():
    core = start_core()
    address = core.address
    try:
        print("\n== ingest: 2 broadcaster processes -> core process -> 1 listener (real Buffer),"
              " paced (bursts each ms) and flat out")
        plan = (((50, (2_000,)),) if QUICK["on"] else
                ((1, (25_000, 40_000, 50_000, 60_000)), (50, (2_000, 3_000, 4_000, 5_000))))
        for batch, rates in plan:
            for rate in rates:  # messages/s per broadcaster process
                seconds = 0.2 if QUICK["on"] else 2.0  # per broadcaster, paced
                res = run_ingest(address, batch, int(rate * seconds), rate, core_pid=core.pid)
                _row("ingest", f"batch {batch}, {rate * batch * 2:,}/s offered",
                     f"{res['per_s']:,.0f}/s, loss {res['loss']:.2%}, listener "
                     f"{res['cpu_per_transform_us']:.2f} µs/transform, core "
                     f"{res['core_us_per_message']:.2f} µs/message", per_s=res["per_s"],
                     loss=res["loss"], listener_us=res["cpu_per_transform_us"])
            flat_count = 150_000 // batch * 2 if batch > 1 else 150_000
            flat = run_ingest(address, batch, flat_count // (20 if QUICK["on"] else 1), 0)
            _row("ingest", f"batch {batch}, flat out",
                 f"{flat['per_s']:,.0f}/s, loss {flat['loss']:.2%}, listener "
                 f"{flat['cpu_per_transform_us']:.2f} µs/transform", per_s=flat["per_s"],
                 loss=flat["loss"], listener_us=flat["cpu_per_transform_us"])
    finally:
        core.stop()


# -- latency ---------------------------------------------------------------------------------


class StampingBuffer(Buffer):
    """Records time_ns() - stamp right after each insertion returns (data available)."""

    def __init__(self):
        super().__init__(cache_time=1e6)
        self.latencies = []

    def set_transforms(self, parents, children, stamps_ns, values, authority, is_static=False):
        result = super().set_transforms(parents, children, stamps_ns, values, authority,
                                        is_static)
        self.latencies.append(time.time_ns() - int(stamps_ns[0]))
        return result

    def set_transform_values(self, parent, child, stamp_ns, *rest, **kwargs):
        # The listener's path for one-transform messages.
        result = super().set_transform_values(parent, child, stamp_ns, *rest, **kwargs)
        self.latencies.append(time.time_ns() - stamp_ns)
        return result


def raw_latency(sub_endpoint, pub_endpoint, mode, count, topic=b"/tf"):
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, topic)
    if mode == "connect":  # publisher connects: we bind
        sub.bind(sub_endpoint)
    else:
        sub.connect(sub_endpoint)
    pub = _spawn([PY, "-c", RAW_PUB, pub_endpoint, mode, str(count), "1000", topic.decode()])
    latencies = []
    try:
        pub.wait_line("ready")
        time.sleep(0.2)
        pub.tell()
        while len(latencies) < count:
            if not sub.poll(3000):
                break
            _, body = sub.recv_multipart()
            latencies.append(time.time_ns() - msgpack.unpackb(body))
        pub.wait_line("done")
    finally:
        pub.stop()
        sub.close(0)
    return latencies


def section_latency(count=5000):
    print(f"\n== latency at 1 kHz, {count} samples (load average {load_average()})")
    core = start_core()
    address = core.address
    try:
        buffer = StampingBuffer()
        listener = TransformListener(buffer, address)
        sender = _spawn([PY, "-c", BROADCASTER, address, "0", str(count), "1", "1000", "now"])
        try:
            sender.wait_line("ready")
            sender.tell()
            sender.wait_line("done", timeout=count / 1000 + 30)
            time.sleep(0.2)
        finally:
            sender.stop()
            listener.close()
        lat = np.array(buffer.latencies) / 1e3
        _row("latency", "send_transform -> in Buffer (via core)",
             f"p50 {percentile(lat, 50):.1f} µs, p99 {percentile(lat, 99):.1f} µs, max "
             f"{lat.max():.1f} µs (n={len(lat)})", p50_us=percentile(lat, 50),
             p99_us=percentile(lat, 99))
        port = int(address.rsplit(":", 1)[1])
        via = raw_latency(f"tcp://127.0.0.1:{port + 1}", address, "connect-core", count)
    finally:
        core.stop()
    via = np.array(via) / 1e3
    _row("latency", "bare pyzmq PUB -> core -> SUB",
         f"p50 {percentile(via, 50):.1f} µs, p99 {percentile(via, 99):.1f} µs (n={len(via)})",
         p50_us=percentile(via, 50), p99_us=percentile(via, 99))


def _free_endpoint():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def section_latency_bare(count=5000):
    endpoint = _free_endpoint()
    bare = raw_latency(endpoint, endpoint, "connect", count)
    bare = np.array(bare) / 1e3
    _row("latency", "bare pyzmq PUB -> SUB (no core)",
         f"p50 {percentile(bare, 50):.1f} µs, p99 {percentile(bare, 99):.1f} µs (n={len(bare)})",
         p50_us=percentile(bare, 50), p99_us=percentile(bare, 99))


# -- fan-out ---------------------------------------------------------------------------------


def section_fanout(listeners=10, window=5.0):
    print(f"\n== fan-out: {listeners} listener processes, 1 broadcaster at 1 kHz x 20 frames "
          f"(one 20-transform message per ms), {window:.0f} s window (load average {load_average()})")
    core = start_core()
    address = core.address
    procs = []
    try:
        procs = [_spawn([PY, "-c", FANOUT_LISTENER, address]) for _ in range(listeners)]
        for p in procs:
            p.wait_line("ready")
        count = int((window + 4) * 1000)
        sender = _spawn([PY, "-c", BROADCASTER, address, "0", str(count), "20", "1000"])
        sender.wait_line("ready")
        sender.tell()
        time.sleep(1.5)
        core0 = cpu_seconds(core.pid)
        send0 = cpu_seconds(sender.pid)
        for p in procs:
            p.tell()
        time.sleep(window)
        for p in procs:
            p.tell()
        core1 = cpu_seconds(core.pid)
        send1 = cpu_seconds(sender.pid)
        results = []
        for p in procs:
            _, cpu, n, *rest = p.wait_line("cpu").split(maxsplit=3)
            results.append((float(cpu), int(n), rest[0].strip() if rest else ""))
        sender.stop()
        core_pct = (core1 - core0) / window * 100
        _row("fanout", f"core process CPU, {listeners} listeners",
             f"{core_pct:.1f} % of one core ({(core1 - core0) / window / 1000 * 1e6:.1f} µs per "
             "20-transform message)", core_percent=core_pct)
        _row("fanout", "broadcaster CPU", f"{(send1 - send0) / window * 100:.1f} %")
        cpus = [c / window * 100 for c, _, _ in results]
        rates = [n / window for _, n, _ in results]
        per_tf = (np.mean([c for c, _, _ in results])
                  / max(np.mean([n for _, n, _ in results]), 1) * 1e6)
        _row("fanout", "each listener's CPU",
             f"mean {np.mean(cpus):.1f} % (min {min(cpus):.1f}, max {max(cpus):.1f}) of one core; "
             f"{np.mean(rates):,.0f} transforms/s each of 20,000/s sent; {per_tf:.2f} µs/transform",
             listener_percent=float(np.mean(cpus)), listener_us=float(per_tf))
    finally:
        for p in procs:
            p.stop()
        core.stop()


# -- listener CPU vs raw floor ----------------------------------------------------------------


class NullSink:
    """Takes messages and stores nothing: the transport's own cost, without the Buffer."""

    def set_transform_values(self, *args):
        return True

    def set_transforms(self, parents, children, stamps_ns, values, authority, is_static=False):
        from tf2py.buffer.core import BatchResult

        return BatchResult(len(parents), 0, [])


def receivers(address, buffer=Buffer):
    """name -> make() returning (receiver with close(), count()): the raw pyzmq+msgpack floor,
    its tight loop, and a listener into a no-op sink and into ``buffer()``."""

    def raw(tight):
        def make():
            r = RawLoop(address, tight)
            return r, lambda: r.count
        return make

    def listener(sink_factory):
        def make():
            lst = TransformListener(sink_factory(), address)
            return lst, lambda: lst.received_transforms
        return make

    return {
        "floor": raw(False),
        "tight floor": raw(True),
        "sink": listener(NullSink),
        "listener": listener(buffer),
    }


def measure_receiver(address, batch, count, rate, make):
    """CPU of this process per received transform while ``make()``'s receiver takes
    ``count`` messages of ``batch`` sent at ``rate`` msg/s by a broadcaster process."""
    receiver, received = make()
    sender = _spawn([PY, "-c", BROADCASTER, address, "9", str(count), str(batch), str(rate)])
    try:
        sender.wait_line("ready")
        c0 = time.process_time()
        sender.tell()
        sender.wait_line("done", timeout=count / rate + 30)
        deadline = time.monotonic() + 2
        while received() < count * batch and time.monotonic() < deadline:
            time.sleep(0.01)
        cpu = time.process_time() - c0
        n = received()
    finally:
        sender.stop()
        receiver.close()
    return cpu / max(n, 1) * 1e6, n


class RawLoop:
    """The floor: a bare pyzmq SUB + msgpack.unpackb of each message, on a thread.
    ``tight``: frames read with copy=False (the fastest pyzmq receive), else recv_multipart."""

    def __init__(self, address, tight=False):
        self.tight = tight
        port = int(address.rsplit(":", 1)[1])
        self.sub = zmq.Context.instance().socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"/tf")
        self.sub.connect(f"tcp://127.0.0.1:{port + 1}")
        self.count = 0
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        sub, unpackb = self.sub, msgpack.unpackb
        if self.tight:
            recv = sub.recv
            while not self.stop:
                if sub.poll(100):
                    for _ in range(1000):
                        try:
                            recv(zmq.NOBLOCK, copy=False)
                        except zmq.Again:
                            break
                        obj = unpackb(recv(0, copy=False))
                        self.count += len(obj[2])
            return
        while not self.stop:
            if sub.poll(100):
                for _ in range(1000):
                    try:
                        _, body = sub.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    obj = unpackb(body)
                    self.count += len(obj[2])

    def close(self):
        self.stop = True
        self.thread.join()
        self.sub.close(0)


def section_floor():
    print("\n== listener CPU per received transform vs raw pyzmq+msgpack floor "
          f"(load average {load_average()})")
    core = start_core()
    address = core.address
    try:
        plan = (((50, 400, 1_000),) if QUICK["on"] else
                ((1, 30_000, 10_000), (1, 60_000, 30_000), (50, 4_000, 1_000)))
        makers = receivers(address, lambda: Buffer(cache_time=1e6))
        for batch, count, rate in plan:
            floor, n0 = measure_receiver(address, batch, count, rate, makers["floor"])
            tight, n3 = measure_receiver(address, batch, count, rate, makers["tight floor"])
            sink, n1 = measure_receiver(address, batch, count, rate, makers["sink"])
            real, n2 = measure_receiver(address, batch, count, rate, makers["listener"])
            _row("floor", f"batch {batch} at {rate * batch:,}/s, µs CPU per transform",
                 f"floor {floor:.2f}, tight floor {tight:.2f}, listener->no-op sink {sink:.2f} "
                 f"({sink / floor:.2f}x), listener->Buffer {real:.2f} ({real / floor:.2f}x floor, "
                 f"{real / tight:.2f}x tight) [n={n0:,}/{n3:,}/{n1:,}/{n2:,}]", floor_us=floor,
                 tight_us=tight, sink_us=sink, buffer_us=real, ratio=real / floor)
    finally:
        core.stop()


SECTIONS = {
    "ingest": section_ingest,
    "latency": lambda: (section_latency(500 if QUICK["on"] else 5000),
                        section_latency_bare(500 if QUICK["on"] else 5000)),
    "fanout": lambda: section_fanout(*((3, 1.0) if QUICK["on"] else (10, 5.0))),
    "floor": section_floor,
}


def main(run: Run, argv: list[str]) -> None:
    QUICK["on"] = run.quick
    chosen = argv or list(SECTIONS)
    for name in chosen:
        if name not in SECTIONS:
            raise SystemExit(f"unknown section {name!r} (choose from {', '.join(SECTIONS)})")
    run.peer("pyzmq", zmq.__version__)
    run.peer("libzmq", zmq.zmq_version())
    _TABLE["t"] = run.table("bus: broadcasters -> core -> listener", ["section", "figure", "value"],
                            [8, 42, 60])
    for name in chosen:
        SECTIONS[name]()

"""Simulated ROS 2 robots on rmw_zenoh's wire, for tf2py fleet's tests and benchmarks.

One process plays many robots (namespaces): per robot it declares rmw_zenoh's liveliness
tokens (a node, a /tf publisher, a /tf_static publisher), publishes its statics once on
``<domain>/<ns>/tf_static/<type>/<hash>`` through a Zenoh advanced publisher with a cache (what
rmw_zenoh does for transient-local), and ``--frames`` transforms per TFMessage on
``<domain>/<ns>/tf/<type>/<hash>`` at ``--rate`` Hz (CDR, little-endian; the stamps are written
into a prepared message, as a robot's broadcaster fills the same frames every cycle).

Cheap enough that the generators are never what a fleet benchmark measures: every robot of the
process is in ONE Zenoh session; their messages are encoded once, side by side in one buffer
(``Block``), and a cycle writes every robot's stamps with one numpy assignment, then hands each
robot's bytes to its publisher (measured: ``python -m bench fleet`` prints the simulators' CPU,
``--sim-only`` the cost per robot alone).

    python simulators/fleet_robots.py --connect tcp/127.0.0.1:7447 --robots 100 --prefix robot

It prints ``ready`` once every robot is declared, then per second nothing; on SIGINT/SIGTERM
(or after ``--duration``) it prints ``sent N messages M transforms`` and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np

from tf2py.transport.ros2.cdr import encode_tf_columns

TF_TYPE = "tf2_msgs::msg::dds_::TFMessage_"
TF_HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
_SENTINEL = 0x7A5A3A1A
#: How long (microseconds) a session waits for room in a link's queue before Zenoh drops a
#: sample (its default: 1 000): the robots' sessions and the router's (run_robots,
#: run_router). Measured with python -m bench fleet --sizes 1000, three runs or more each:
#: 1 ms lost 0.4-0.9 % in half the runs, 50 ms 0.1-1.1 % in half, 500 ms none; the router
#: alone at 1 ms (robots at 500 ms) lost 0.24 % in one run of three.
SESSION_WAIT_BEFORE_DROP_US = 500_000


def _mangle(name: str) -> str:
    return name.replace("/", "%") or "%"


def token_keys(domain: int, session: str, namespace: str, node: str) -> list[str]:
    """rmw_zenoh's liveliness tokens of one node with a /tf and a /tf_static publisher."""
    ns = _mangle("/" + namespace if namespace else "/")
    base = f"@ros2_lv/{domain}/{session}/0"
    node_key = f"{base}/0/NN/%/{ns}/{node}"
    qos = {"tf": "::,100:,:,:,,", "tf_static": ":1:,1:,:,:,,"}
    out = [node_key]
    for entity, topic in ((1, "tf"), (2, "tf_static")):
        name = _mangle(f"/{namespace}/{topic}" if namespace else f"/{topic}")
        out.append(f"{base}/{entity}/MP/%/{ns}/{node}/{name}/{TF_TYPE}/{TF_HASH}/{qos[topic]}")
    return out


def data_key(domain: int, namespace: str, topic: str) -> str:
    path = f"{namespace}/{topic}" if namespace else topic
    return f"{domain}/{path}/{TF_TYPE}/{TF_HASH}"


def robot_frames(frames: int) -> tuple[list[str], list[str]]:
    """map -> odom -> base_link -> link_1 .. link_{frames-2}: ``frames`` dynamic transforms."""
    parents = ["map", "odom"] + ["base_link"] * max(0, frames - 2)
    children = ["odom", "base_link"] + [f"link_{i}" for i in range(1, frames - 1)]
    return parents[:frames], children[:frames]


class Template:
    """A TFMessage whose stamps are rewritten in place for every cycle."""

    def __init__(self, parents: list[str], children: list[str], x: float):
        n = len(parents)
        values = np.zeros((n, 7))
        values[:, 0] = x
        values[:, 6] = 1.0
        stamps = np.full(n, _SENTINEL * 1_000_000_000, dtype=np.int64)
        raw = encode_tf_columns(parents, children, stamps, values)
        mark = struct.pack("<i", _SENTINEL)
        self.offsets = []
        start = raw.find(mark)
        while start >= 0:
            self.offsets.append(start)
            start = raw.find(mark, start + 8)
        assert len(self.offsets) == n, "sentinel stamp found a wrong number of times"
        self.raw = bytearray(raw)

    def message(self, stamp_ns: int) -> bytes:
        sec, nanosec = divmod(stamp_ns, 1_000_000_000)
        packed = struct.pack("<iI", sec, nanosec)
        raw = self.raw
        for offset in self.offsets:
            raw[offset:offset + 8] = packed
        return bytes(raw)


class Block:
    """Every robot's TFMessage encoded once, side by side (8-byte aligned) in one buffer; a
    cycle's stamps go into all of them with one numpy assignment (``stamp``), then
    ``message(k)`` is robot k's bytes. Robot k's transforms sit at x = ``xs[k]``."""

    def __init__(self, parents: list[str], children: list[str], xs: list[float]):
        first = Template(parents, children, 0.0)
        size = len(first.raw)
        self.size = size
        self.stride = (size + 7) // 8 * 8
        self.raw = bytearray(self.stride * len(xs))
        for k, x in enumerate(xs):
            self.raw[k * self.stride:k * self.stride + size] = Template(parents, children, x).raw
        # CDR aligns each stamp's int32 seconds to 4 (after the 4-byte header): int32 indices.
        words = np.asarray(first.offsets, dtype=np.int64) // 4
        assert all(offset % 4 == 0 for offset in first.offsets)
        per_robot = (np.arange(len(xs), dtype=np.int64) * (self.stride // 4))[:, None]
        self._sec = (per_robot + words[None, :]).ravel()
        self._nsec = self._sec + 1
        self._words = np.frombuffer(self.raw, dtype="<i4")
        self._view = memoryview(self.raw)

    def stamp(self, stamp_ns: int) -> None:
        """Write ``stamp_ns`` into every transform of every robot."""
        sec, nanosec = divmod(stamp_ns, 1_000_000_000)
        self._words[self._sec] = sec
        self._words[self._nsec] = np.int32(np.uint32(nanosec).view(np.int32))

    def message(self, k: int) -> bytes:
        """Robot k's message as stamped last."""
        start = k * self.stride
        return self._view[start:start + self.size].tobytes()


def run_router(locator: str) -> int:
    """A Zenoh router on ``locator``, multicast scouting off; ``ready`` once listening."""
    import zenoh

    config = zenoh.Config()
    config.insert_json5("mode", '"router"')
    config.insert_json5("listen/endpoints", json.dumps([locator]))
    config.insert_json5("scouting/multicast/enabled", "false")
    # A fleet's router relays every robot's /tf to the fleet over one link (1 000 robots: 100
    # MB/s). Zenoh's default drops a sample that finds that link's queue full for 1 ms; on
    # this 2-core machine under the fleet benchmark's load (2 to 3.5 runnable threads per
    # core) a process is held off the CPU longer than that, and 0.1-1 % of the samples of 1 000
    # robots were dropped here in some runs, counted by no one. docs/scale.md says what a
    # site's router should set.
    config.insert_json5("transport/link/tx/queue/congestion_control/drop/wait_before_drop",
                        str(SESSION_WAIT_BEFORE_DROP_US))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    session = zenoh.open(config)
    print("ready", flush=True)
    stop.wait()
    session.close()
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--router":
        return run_router(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", required=True, help="Zenoh locator, e.g. tcp/127.0.0.1:7447")
    parser.add_argument("--domain", type=int, default=0)
    parser.add_argument("--robots", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="number of the first robot")
    parser.add_argument("--prefix", default="robot")
    parser.add_argument("--root", action="store_true", help="one robot in the root namespace")
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--statics", type=int, default=2)
    parser.add_argument("--duration", type=float, default=0.0)
    parser.add_argument("--no-tokens", action="store_true")
    parser.add_argument("--wait-matched", type=float, default=0.0, metavar="SECONDS",
                        help="before the first cycle, wait (at most this long) until every "
                        "robot's /tf publisher has a subscriber: what is sent before Zenoh "
                        "knows of one is dropped by the publisher, and would count as lost")
    parser.add_argument("--garbage", type=int, default=0,
                        help="also send this many garbage and wrong-typed samples first")
    args = parser.parse_args()

    from zenoh.ext import CacheConfig, declare_advanced_publisher

    import zenoh

    config = zenoh.Config()
    config.insert_json5("mode", '"client"')
    config.insert_json5("connect/endpoints", json.dumps([args.connect]))
    config.insert_json5("scouting/multicast/enabled", "false")
    # An advanced publisher (transient-local statics) stamps its samples, as rmw_zenoh's do.
    config.insert_json5("timestamping/enabled", '{router: true, peer: true, client: true}')
    # One session plays hundreds of robots: every cycle it queues all their samples at once
    # (500 robots: 2.4 MB), where a robot's own session queues one. Zenoh drops a sample that
    # finds its session's queue to the router full for 1 ms (wait_before_drop), so the
    # simulator lost samples before the fleet saw them; waiting longer plays the robots as
    # their own sessions would send, still dropping (never blocking) when the router really
    # stops reading.
    config.insert_json5("transport/link/tx/queue/congestion_control/drop/wait_before_drop",
                        str(SESSION_WAIT_BEFORE_DROP_US))
    session = zenoh.open(config)
    session_id = str(session.info.zid())
    namespaces = [""] if args.root else [
        f"{args.prefix}{i}" for i in range(args.first, args.first + args.robots)]
    tokens = []
    publishers = []
    static_publishers = []
    parents, children = robot_frames(args.frames)
    for index, ns in enumerate(namespaces):
        if not args.no_tokens:
            for key in token_keys(args.domain, session_id, ns, f"sim_{index}"):
                tokens.append(session.liveliness().declare_token(key))
        publishers.append(session.declare_publisher(
            data_key(args.domain, ns, "tf")))
        if args.statics:
            static = declare_advanced_publisher(
                session, data_key(args.domain, ns, "tf_static"),
                cache=CacheConfig(max_samples=1), publisher_detection=True)
            static_publishers.append(static)
            s_parents = ["base_link"] * args.statics
            s_children = ["laser"] + [f"sensor_{i}" for i in range(1, args.statics)]
            values = np.zeros((args.statics, 7))
            values[:, 2] = 0.5
            values[:, 6] = 1.0
            static.put(encode_tf_columns(s_parents, s_children,
                                         np.zeros(args.statics, dtype=np.int64), values))
    block = Block(parents, children, [float(k) for k in range(len(namespaces))])
    message = block.message
    for _ in range(args.garbage):
        publishers[0].put(b"\x00\x01\x00\x00\x01\x00\x00\x00garbage")
        session.put(f"{args.domain}/{namespaces[0] or 'x'}/tf/std_msgs::msg::dds_::String_/"
                    f"{TF_HASH}", b"\x00\x01\x00\x00\x05\x00\x00\x00hello\x00")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    deadline = time.monotonic() + args.wait_matched
    unmatched = list(publishers) if args.wait_matched > 0 else []
    while unmatched and time.monotonic() < deadline and not stop.is_set():
        unmatched = [p for p in unmatched if not p.matching_status.matching]
        if unmatched:
            stop.wait(0.02)
    print(f"ready ({len(publishers) - len(unmatched)} of {len(publishers)} publishers matched)"
          if args.wait_matched > 0 else "ready", flush=True)
    messages = 0
    period = 1.0 / args.rate if args.rate > 0 else 0.0
    start = time.monotonic()
    next_cycle = start
    while not stop.is_set():
        if args.duration and time.monotonic() - start >= args.duration:
            break
        block.stamp(time.time_ns())
        for k, publisher in enumerate(publishers):
            publisher.put(message(k))
        messages += len(publishers)
        if period:
            next_cycle += period
            delay = next_cycle - time.monotonic()
            if delay > 0:
                stop.wait(delay)
            else:
                next_cycle = time.monotonic()
    print(f"sent {messages} messages {messages * args.frames} transforms "
          f"in {time.monotonic() - start:.3f} s", flush=True)
    # The last cycle may still be on its way out of the session's queue (a few MB): closing
    # the session now would drop it, counted as sent. (A stop asked for does not wait.)
    stop.wait(1.0)
    for entity in tokens + publishers + static_publishers:
        entity.undeclare()
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

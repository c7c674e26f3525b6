"""Benchmark: tf2py.bag.load of a real recording against the bare read loops of the libraries.

    python -m bench bag [BAG] [--repeat N]

Default BAG: ../shared/data/nav2_turtlebot.mcap (7 313 transforms in 5 423 /tf and
/tf_static messages). Every row reads the same /tf and /tf_static messages of the same file;
the figure is the median of N runs (default 15), each opening the file afresh.

Rows:
- rosbags raw read: rosbags' reader yields the messages' bytes, nothing decoded (the floor).
- rosbags read + deserialize: the same loop plus rosbags' typestore decoding each message
  into objects, i.e. the loop a user writes to get the transforms out with rosbags alone.
- mcap + mcap-ros2-support decode: the same with the mcap libraries.
- tf2py.bag.read_transforms: rosbags raw read + tf2py's TFMessage codec into arrays.
- tf2py.bag.load: all of the above plus inserting into a new Buffer (set_transforms).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.harness import Missing, Run, version_of
from simulators.shared_data import shared_data

DEFAULT_BAG = shared_data() / "nav2_turtlebot.mcap"
TOPICS = ("/tf", "/tf_static")


def rosbags_raw(path):
    from rosbags.rosbag2 import Reader

    n = 0
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic in TOPICS]
        for _connection, _timestamp, raw in reader.messages(connections=connections):
            n += len(raw) > 0
    return n


def rosbags_deserialize(path):
    from rosbags.highlevel import AnyReader

    n = 0
    with AnyReader([path]) as reader:
        connections = [c for c in reader.connections if c.topic in TOPICS]
        for connection, _timestamp, raw in reader.messages(connections=connections):
            n += len(reader.deserialize(raw, connection.msgtype).transforms)
    return n


def mcap_decode(path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    n = 0
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _s, _c, _m, msg in reader.iter_decoded_messages(topics=list(TOPICS)):
            n += len(msg.transforms)
    return n


def tf2py_read(path):
    from tf2py.bag import read_transforms

    return len(read_transforms(path))


def tf2py_load(path):
    from tf2py.bag import load

    buffer = load(path)
    return len(buffer.get_frames())


def measure(fn, path, repeat):
    fn(path)  # warm-up: imports, page cache
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bag", description=__doc__.splitlines()[0])
    parser.add_argument("bag", nargs="?", default=str(DEFAULT_BAG))
    parser.add_argument("--repeat", type=int, default=3 if run.quick else 15)
    args = parser.parse_args(argv)
    path = Path(args.bag)
    if not path.exists():
        raise Missing(f"no bag at {path} (give one: python -m bench bag PATH)")

    from tf2py.bag import read_transforms

    data = read_transforms(path)
    n_transforms, n_messages = len(data), data.message_count
    run.peer("rosbags", version_of("rosbags"))
    run.peer("mcap-ros2-support", version_of("mcap-ros2-support"))
    rows = [
        ("rosbags raw read (bytes only)", rosbags_raw),
        ("rosbags read + deserialize", rosbags_deserialize),
        ("mcap + mcap-ros2-support decode", mcap_decode),
        ("tf2py.bag.read_transforms", tf2py_read),
        ("tf2py.bag.load (into a Buffer)", tf2py_load),
    ]
    results = {}
    bests = {}
    table = run.table(f"{path.name}: {n_transforms} transforms in {n_messages} /tf + /tf_static "
                      f"messages, {path.stat().st_size / 1e6:.2f} MB; median and best of "
                      f"{args.repeat} runs", ["loop", "median ms", "best ms", "transforms/s",
                                             "µs/transform"], [34, 10, 9, 14, 13])
    for name, fn in rows:
        median, best = measure(fn, path, args.repeat)
        results[name] = median
        bests[name] = best
        table.add(name, f"{median * 1e3:.2f}", f"{best * 1e3:.2f}", f"{n_transforms / median:,.0f}",
                  f"{median / n_transforms * 1e6:.2f}", median_s=median, best_s=best)
    ratios = run.table("tf2py.bag.load against each (median runs | best runs; on a shared machine "
                       "the best runs are the steadier)", ["ratio", "median", "best", "target"],
                       [34, 8, 8, 8])
    load = "tf2py.bag.load (into a Buffer)"
    for label, other, target in [
        ("load / rosbags read + deserialize", "rosbags read + deserialize", "≤ 2x"),
        ("load / rosbags raw read", "rosbags raw read (bytes only)", ""),
        ("load / mcap-ros2 decode", "mcap + mcap-ros2-support decode", ""),
    ]:
        ratios.add(label, f"{results[load] / results[other]:.2f}x",
                   f"{bests[load] / bests[other]:.2f}x", target,
                   ratio=results[load] / results[other], ratio_best=bests[load] / bests[other])

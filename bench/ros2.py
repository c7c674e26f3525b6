"""ROS 2 benchmarks: tf2py against rclpy (ROS 2 Jazzy, Fast DDS) on one machine, same run.

    python -m bench ros2            # about 2 minutes; needs the ros2 extra and the peer
                                    # environment (built by `python tests/ros2/peer_env.py`)
    python -m bench ros2 --quick    # the 1 kHz runs only, 300 messages (no rate ladders)

Every node is its own process (bench/ros2_node.py, run by tf2py's Python or by the peer's,
which has rclpy), on a fresh ROS_DOMAIN_ID with localhost-only discovery.

ROS 2 -> tf2py: an rclpy publisher; a tf2py TransformListener (filling a real Buffer) and an
  rclpy subscriber that does nothing with the message, receiving side by side.
  - without loss: the highest paced rate (of a descending ladder) at which a receiver gets
    every message, single transforms and batches of 50;
  - 1 kHz: latency (stamp = wall clock at sending, to receipt; tf2py: in the Buffer) p50/p99,
    and the receiver's CPU time per transform.
Decoding: tf2py's CDR decoder vs cyclonedds-python's IdlStruct.deserialize, per sample.
tf2py -> ROS 2: a tf2py broadcaster vs an rclpy publisher, each to an rclpy subscriber: the
  same ladder and 1 kHz figures, and the SENDER's CPU per transform.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

from bench.harness import PY, REPO, Missing, Run

NODE = str(REPO / "bench" / "ros2_node.py")
#: Messages per second tried, highest first; each step sends 1.5 s worth (at least 500).
LADDER = {1: (16000, 8000, 4000, 2000, 1000), 50: (1600, 800, 400, 200, 100)}


def run(peer_python, publisher, subscribers, count, batch, rate, idle=3.0):
    """(publisher's figures, [each subscriber's figures]) of one run."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(30, 99)),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
               PYTHONUNBUFFERED="1")
    env.pop("ROS_LOCALHOST_ONLY", None)

    def python(impl):
        return peer_python if impl == "rclpy" else sys.executable

    subs = [subprocess.Popen([python(s), NODE, s, "sub", str(count), str(batch), str(idle)],
                             stdout=subprocess.PIPE, text=True, env=env) for s in subscribers]
    for s in subs:
        s.stdout.readline()  # ready
    pub = subprocess.Popen([python(publisher), NODE, publisher, "pub", str(count), str(batch),
                            str(rate), str(len(subs))], stdout=subprocess.PIPE, text=True, env=env)
    results = [json.loads(s.stdout.readline()) for s in subs]
    sender = json.loads(pub.stdout.readline())
    pub.wait(120)
    for s in subs:
        s.wait(30)
    return sender, results


def ladder(peer_python, publisher, subscribers, batch):
    """The highest loss-free rate in transforms/s per subscriber (0: none of the ladder)."""
    best = [0.0] * len(subscribers)
    for rate in LADDER[batch]:
        count = max(500, int(rate * 1.5))
        _, results = run(peer_python, publisher, subscribers, count, batch, rate)
        for k, result in enumerate(results):
            if not best[k] and result["received"] == count:
                best[k] = result["rate_tf"]
        if all(best):
            break
    return best


def decode_figures() -> None:
    """tf2py's hand-written CDR decoder vs cyclonedds-python's IdlStruct deserialisation of
    the same TFMessage samples (the alternative: an object per transform)."""
    import timeit

    import numpy as np

    from tf2py.transport.ros2 import cdr, types

    print("decoding one TFMessage sample (best of 3):")
    for n in (1, 50):
        sample = cdr.encode_tf_columns(["map"] * n, [f"frame_{j}" for j in range(n)],
                                       list(range(n)), np.tile([1.0, 2, 3, 0, 0, 0, 1], (n, 1)))
        k = 20000 if n == 1 else 2000

        def best(fn):
            return min(timeit.repeat(fn, number=k, repeat=3)) / k * 1e6
        idl = best(lambda: types.TFMessage.deserialize(sample))
        if n == 1:
            own = best(lambda: cdr.decode_tf_single(sample))
            print(f"  {n:>2} transform:  tf2py cdr {own:7.1f} us, IdlStruct.deserialize "
                  f"{idl:7.1f} us ({idl / own:.0f}x)", flush=True)
            continue
        own = best(lambda: cdr.decode_tf(sample))
        decoder = cdr.TfDecoder()
        decoder.decode(sample)
        again = best(lambda: decoder.decode(sample))
        print(f"  {n:>2} transforms: tf2py cdr {own:7.1f} us (the same frames again: "
              f"{again:.1f} us), IdlStruct.deserialize {idl:7.1f} us ({idl / again:.0f}x)",
              flush=True)


def peer_python() -> str:
    """The ROS 2 peer environment's python, from the command that builds it (the tests' own:
    run, not imported, so that benchmarks and tests do not import each other)."""
    done = subprocess.run([PY, str(REPO / "tests" / "ros2" / "peer_env.py")], capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0 or not done.stdout.strip():
        raise Missing("no ROS 2 peer environment (rclpy): "
                      + (done.stderr.strip().splitlines() or ["?"])[-1])
    return done.stdout.strip().splitlines()[-1]


def main(run_: Run, argv: list[str]) -> None:
    if argv:
        raise SystemExit("python -m bench ros2 takes no arguments but --quick")
    peer = peer_python()
    run_.peer("rclpy (ROS 2 Jazzy, Fast DDS)", peer)
    decode_figures()
    if run_.quick:
        quick(peer)
        return
    full(peer)


def quick(peer_python: str) -> None:
    """The 1 kHz runs both ways, 300 messages each: a smoke run of every process kind."""
    _, (mine, theirs) = run(peer_python, "rclpy", ["tf2py", "rclpy"], 300, 1, 1000)
    for name, r in (("tf2py Listener+Buffer", mine), ("rclpy subscriber (no-op)", theirs)):
        print(f"  1 kHz, {name:<26} received {r['received']}/300  p50 {r['p50_us']:>6.0f} us  "
              f"p99 {r['p99_us']:>6.0f} us  CPU {r['cpu_us_per_tf']:>6.1f} us/tf", flush=True)
    s, (r,) = run(peer_python, "tf2py", ["rclpy"], 300, 1, 1000)
    print(f"  1 kHz from tf2py: received {r['received']}/300, sender CPU "
          f"{s['cpu_us_per_tf']:.1f} us/tf", flush=True)


def full(peer_python: str) -> None:

    print("\nROS 2 -> tf2py (an rclpy publisher; both receivers at once)")
    for batch in (1, 50):
        tf2py_rate, rclpy_rate = ladder(peer_python, "rclpy", ["tf2py", "rclpy"], batch)
        print(f"  without loss, {batch:>2} tf/msg: tf2py Listener+Buffer {tf2py_rate:>8.0f} tf/s, "
              f"rclpy subscriber {rclpy_rate:>8.0f} tf/s  (ratio {tf2py_rate / max(rclpy_rate, 1):.2f})",
              flush=True)
    _, (mine, theirs) = run(peer_python, "rclpy", ["tf2py", "rclpy"], 3000, 1, 1000)
    for name, r in (("tf2py Listener+Buffer", mine), ("rclpy subscriber (no-op)", theirs)):
        print(f"  1 kHz, {name:<26} received {r['received']}/3000  p50 {r['p50_us']:>6.0f} us  "
              f"p99 {r['p99_us']:>6.0f} us  CPU {r['cpu_us_per_tf']:>6.1f} us/tf", flush=True)
    print(f"  -> receiver CPU per transform at 1 kHz, tf2py / rclpy: "
          f"{mine['cpu_us_per_tf'] / max(theirs['cpu_us_per_tf'], 1e-9):.2f}")
    _, (mine, theirs) = run(peer_python, "rclpy", ["tf2py", "rclpy"], 1000, 50, 200)
    print(f"  200 Hz x 50 tf: receiver CPU per transform tf2py {mine['cpu_us_per_tf']:.1f} us, "
          f"rclpy {theirs['cpu_us_per_tf']:.1f} us (ratio "
          f"{mine['cpu_us_per_tf'] / max(theirs['cpu_us_per_tf'], 1e-9):.2f})", flush=True)

    print("\ntf2py -> ROS 2 (an rclpy subscriber receives; one sender at a time)")
    for batch in (1, 50):
        (from_tf2py,) = ladder(peer_python, "tf2py", ["rclpy"], batch)
        (from_rclpy,) = ladder(peer_python, "rclpy", ["rclpy"], batch)
        print(f"  without loss, {batch:>2} tf/msg: from tf2py {from_tf2py:>8.0f} tf/s, "
              f"from rclpy {from_rclpy:>8.0f} tf/s", flush=True)
    for batch, rate in ((1, 1000), (50, 200)):
        out = {}
        for sender in ("tf2py", "rclpy"):
            out[sender] = run(peer_python, sender, ["rclpy"], 3000 if batch == 1 else 1000,
                              batch, rate)
        for sender, (s, (r,)) in out.items():
            print(f"  {rate} Hz x {batch:>2} tf, from {sender:<5}: received {r['received']}  "
                  f"p50 {r['p50_us']:>6.0f} us  p99 {r['p99_us']:>6.0f} us  "
                  f"sender CPU {s['cpu_us_per_tf']:>6.1f} us/tf", flush=True)
        print(f"  -> sender CPU per transform, tf2py / rclpy: "
              f"{out['tf2py'][0]['cpu_us_per_tf'] / max(out['rclpy'][0]['cpu_us_per_tf'], 1e-9):.2f}")

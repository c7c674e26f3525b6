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


def decode_figures(run_: Run) -> None:
    """tf2py's hand-written CDR decoder vs cyclonedds-python's IdlStruct deserialisation of
    the same TFMessage samples (the alternative: an object per transform)."""
    import timeit

    import numpy as np

    from tf2py.transport.ros2 import cdr, types

    table = run_.table("decoding one TFMessage sample (best of 3)",
                       ["transforms", "tf2py cdr µs", "same frames again µs",
                        "IdlStruct.deserialize µs", "ratio"], [11, 13, 21, 25, 6])
    for n in (1, 50):
        sample = cdr.encode_tf_columns(["map"] * n, [f"frame_{j}" for j in range(n)],
                                       list(range(n)), np.tile([1.0, 2, 3, 0, 0, 0, 1], (n, 1)))
        k = 20000 if n == 1 else 2000

        def best(fn):
            return min(timeit.repeat(fn, number=k, repeat=3)) / k * 1e6
        idl = best(lambda: types.TFMessage.deserialize(sample))
        if n == 1:
            own = best(lambda: cdr.decode_tf_single(sample))
            table.add(n, f"{own:.1f}", "", f"{idl:.1f}", f"{idl / own:.0f}x", tf2py_us=own,
                      peer_us=idl)
            continue
        own = best(lambda: cdr.decode_tf(sample))
        decoder = cdr.TfDecoder()
        decoder.decode(sample)
        again = best(lambda: decoder.decode(sample))
        table.add(n, f"{own:.1f}", f"{again:.1f}", f"{idl:.1f}", f"{idl / again:.0f}x",
                  tf2py_us=own, again_us=again, peer_us=idl)


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
    decode_figures(run_)
    if run_.quick:
        quick(run_, peer)
        return
    full(run_, peer)


def receiving(run_: Run, peer_python: str, shapes: list[tuple[int, int, int]]) -> None:
    """An rclpy publisher; a tf2py Listener+Buffer and a no-op rclpy subscriber receive at once.
    ``shapes``: (messages, transforms per message, messages/s)."""
    table = run_.table("ROS 2 -> tf2py: an rclpy publisher, both receivers at once",
                       ["shape", "receiver", "received", "p50 µs", "p99 µs", "CPU µs/tf",
                        "tf2py / rclpy CPU"], [16, 26, 10, 8, 8, 10, 18])
    for count, batch, rate in shapes:
        _, (mine, theirs) = run(peer_python, "rclpy", ["tf2py", "rclpy"], count, batch, rate)
        ratio = mine["cpu_us_per_tf"] / max(theirs["cpu_us_per_tf"], 1e-9)
        for name, r in (("tf2py Listener+Buffer", mine), ("rclpy subscriber (no-op)", theirs)):
            table.add(f"{rate} Hz x {batch}", name, f"{r['received']}/{count}",
                      f"{r['p50_us']:.0f}", f"{r['p99_us']:.0f}", f"{r['cpu_us_per_tf']:.1f}",
                      f"{ratio:.2f}" if name.startswith("tf2py") else "", **r)


def sending(run_: Run, peer_python: str, shapes: list[tuple[int, int, int]]) -> None:
    """A tf2py broadcaster, then an rclpy publisher, each to an rclpy subscriber."""
    table = run_.table("tf2py -> ROS 2: an rclpy subscriber receives, one sender at a time",
                       ["shape", "sender", "received", "p50 µs", "p99 µs", "sender CPU µs/tf",
                        "tf2py / rclpy CPU"], [16, 8, 10, 8, 8, 17, 18])
    for count, batch, rate in shapes:
        out = {sender: run(peer_python, sender, ["rclpy"], count, batch, rate)
               for sender in ("tf2py", "rclpy")}
        ratio = out["tf2py"][0]["cpu_us_per_tf"] / max(out["rclpy"][0]["cpu_us_per_tf"], 1e-9)
        for sender, (s, (r,)) in out.items():
            table.add(f"{rate} Hz x {batch}", sender, f"{r['received']}/{count}",
                      f"{r['p50_us']:.0f}", f"{r['p99_us']:.0f}", f"{s['cpu_us_per_tf']:.1f}",
                      f"{ratio:.2f}" if sender == "tf2py" else "",
                      sender_cpu_us_per_tf=s["cpu_us_per_tf"], **r)


def quick(run_: Run, peer_python: str) -> None:
    """The 1 kHz runs both ways, 300 messages each: a smoke run of every process kind."""
    receiving(run_, peer_python, [(300, 1, 1000)])
    sending(run_, peer_python, [(300, 1, 1000)])


def full(run_: Run, peer_python: str) -> None:
    print("\nROS 2 -> tf2py (an rclpy publisher; both receivers at once)")
    for batch in (1, 50):
        tf2py_rate, rclpy_rate = ladder(peer_python, "rclpy", ["tf2py", "rclpy"], batch)
        run_.note(f"without loss, {batch} tf/msg: tf2py Listener+Buffer {tf2py_rate:.0f} tf/s, "
                  f"rclpy subscriber {rclpy_rate:.0f} tf/s (ratio "
                  f"{tf2py_rate / max(rclpy_rate, 1):.2f})")
    receiving(run_, peer_python, [(3000, 1, 1000), (1000, 50, 200)])
    print("\ntf2py -> ROS 2 (an rclpy subscriber receives; one sender at a time)")
    for batch in (1, 50):
        (from_tf2py,) = ladder(peer_python, "tf2py", ["rclpy"], batch)
        (from_rclpy,) = ladder(peer_python, "rclpy", ["rclpy"], batch)
        run_.note(f"without loss, {batch} tf/msg: from tf2py {from_tf2py:.0f} tf/s, "
                  f"from rclpy {from_rclpy:.0f} tf/s")
    sending(run_, peer_python, [(3000, 1, 1000), (1000, 50, 200)])

"""Command-line figures: start-up cost of the tf2py command, how fast the live demo shows
transforms and stops, and the CPU each demo process uses.

    python -m bench cli [--seconds S]

Runs everything on free loopback ports (TF2PY_CORE / TF2PY_SERVER). Linux only (/proc).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

from bench.harness import REPO, Run, cpu_seconds, free_port

TF2PY = [sys.executable, "-m", "tf2py.cli.main"]


def wall(argv, repeats=7) -> float:
    """Median wall time of running argv to completion, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def demo(run: Run, seconds: float) -> None:
    core = free_port(pair=True)
    server = free_port()
    while server in (core, core + 1):
        server = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF2PY_CORE=f"tcp://127.0.0.1:{core}",
               TF2PY_SERVER=f"tcp://127.0.0.1:{server}")
    start = time.perf_counter()
    proc = subprocess.Popen([*TF2PY, "launch", os.path.join(REPO, "launch", "demo.yaml")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=REPO, start_new_session=True)
    lines: list[str] = []
    first_block = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("[echo] At time"):
                first_block.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not first_block.wait(60):
            raise SystemExit("the demo showed no transform within 60 s:\n" + "".join(lines))
        shown = time.perf_counter() - start
        pids = {m.group(1): int(m.group(2)) for m in
                re.finditer(r"^\[launch\] started (\S+) \(pid (\d+)\)", "".join(lines), re.M)}
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        t0 = time.perf_counter()
        time.sleep(seconds)
        elapsed = time.perf_counter() - t0
        after = {name: cpu_seconds(pid) for name, pid in pids.items()}
        stop = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(30)
        stopped = time.perf_counter() - stop
    finally:
        if proc.poll() is None:
            proc.kill()
    table = run.table("the demo, `tf2py launch launch/demo.yaml`", ["figure", "value"], [44, 24])
    table.add("first echo block after the launch", f"{shown:.2f} s", seconds=shown)
    table.add("Ctrl-C to every process stopped", f"{stopped:.2f} s (exit code {rc})",
              seconds=stopped)
    for name in pids:
        share = 100 * (after[name] - before[name]) / elapsed
        table.add(f"CPU of {name} over {elapsed:.1f} s", f"{share:.1f} % of one core",
                  percent=share)


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench cli", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0 if run.quick else 5.0,
                        help="how long to measure the demo's CPU (default 5)")
    args = parser.parse_args(argv)
    table = run.table("start-up, wall time to completion (median of 7)", ["command", "ms"], [44, 8])
    for label, argv_ in (("tf2py --help", [*TF2PY, "--help"]),
                         ("tf2py echo --help", [*TF2PY, "echo", "--help"]),
                         ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"])):
        ms = 1000 * wall(argv_)
        table.add(label, f"{ms:.0f}", ms=ms)
    demo(run, args.seconds)


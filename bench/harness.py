"""The harness of tf2py's benchmarks: timing (interleaved repeats, medians of back-to-back
pairs), /proc sampling of processes, percentiles, child processes; and, from bench.report,
the run with its conditions, tables and JSON.

A benchmark module (``bench/NAME.py``, named in ``bench.BENCHMARKS``) defines
``main(run: Run, argv: list[str]) -> None``; ``python -m bench NAME`` builds the ``Run``
(conditions at the start, ``--quick``), calls ``main``, and writes the JSON. Rows go through
``run.table(...)`` so that they are printed as measured and kept for the JSON and for
``python -m bench report`` (docs/performance.md).
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from itertools import cycle, islice, repeat
from pathlib import Path
from typing import Any

import numpy as np

# The run, its conditions and its tables live in bench.report (which also renders them into
# docs/performance.md); benchmarks take them from here with the rest of the harness.
from bench.report import (  # noqa: F401
    DASH,
    REPO,
    RESULTS_DIR,
    Missing,
    Run,
    Table,
    conditions,
    fmt_ns,
    fmt_ratio,
    load_average,
    version_of,
)

PY = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")
pc = time.perf_counter_ns


# --- /proc


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU seconds of a process (``"self"``: this one), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_cpu_seconds(native_id: int) -> float:
    """User + system CPU seconds of one thread of this process."""
    return cpu_seconds(f"self/task/{native_id}")


def threads_cpu(pid: int | str = "self") -> dict[str, float]:
    """CPU seconds of a process's threads, summed by thread name without its number (Zenoh's
    runtime names its threads ``rx-0``, ``net-0``, ...; Python threads keep the process's
    name), to the nanosecond (the scheduler's ``schedstat``; the tick-counted ``stat`` where
    the kernel has none)."""
    out: dict[str, float] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        where = f"/proc/{pid}/task/{task}"
        try:
            with open(f"{where}/comm") as f:
                name = f.read().strip().rstrip("0123456789-")
            try:
                with open(f"{where}/schedstat") as f:
                    seconds = int(f.read().split()[0]) / 1e9
            except OSError:
                seconds = cpu_seconds(f"{pid}/task/{task}")
        except OSError:  # the thread ended meanwhile
            continue
        out[name] = out.get(name, 0.0) + seconds
    return out


def status_kib(pid: int | str, field: str) -> int:
    """A memory figure of /proc/PID/status in KiB (``"VmRSS"``, ``"VmHWM"``), 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_mib(pid: int | str = "self") -> float:
    return status_kib(pid, "VmRSS") / 1024


def hwm_mib(pid: int | str = "self") -> float:
    return status_kib(pid, "VmHWM") / 1024


def cpu_percent(pid: int | str, seconds: float) -> float:
    """A process's CPU use (user + system, % of one core) over ``seconds`` from now."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def watch_peak_mib(pid: int, seconds: float, interval: float = 0.05) -> float:
    """The largest VmRSS of a process seen over ``seconds``."""
    peak = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peak = max(peak, rss_mib(pid))
        time.sleep(interval)
    return peak


# --- Statistics and timing


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The q-th percentile (0..100, linear interpolation); NaN of nothing."""
    if len(values) == 0:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


class Runs(list[float]):
    """One case's figure per repeat (ns per call), in the order the repeats ran."""

    @property
    def median(self) -> float:
        return statistics.median(self)

    def __truediv__(self, k: float) -> Runs:
        return Runs(v / k for v in self)


def median_of(x: Runs | float | None) -> float | None:
    return x.median if isinstance(x, Runs) else x


def paired_ratio(ours: Runs | float, peer: Runs | float) -> float:
    """ours / peer: the median of the per-repeat ratios when both cases ran in the same
    repeats (each pair measured back to back, so a change of the machine's load between
    repeats cancels), else the ratio of the medians."""
    if isinstance(ours, Runs) and isinstance(peer, Runs) and len(ours) == len(peer):
        return statistics.median(a / b for a, b in zip(ours, peer))
    return float(median_of(ours) or 0.0) / float(median_of(peer) or 1.0)


def best_per_op(fn: Callable[[], object], number: int, repeat_: int) -> float:
    """Seconds per call of ``fn``: the best of ``repeat_`` loops of ``number`` calls."""
    return best_of_interleaved([fn], number, repeat_)[0]


def best_of_interleaved(fns: Sequence[Callable[[], object]], number: int,
                        repeat_: int) -> list[float]:
    """Seconds per call of each fn, best of ``repeat_``, the fns' loops taking turns."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat_):
        for k, fn in enumerate(fns):
            gc.disable()
            t0 = time.perf_counter()
            for _ in repeat(None, number):
                fn()
            best[k] = min(best[k], time.perf_counter() - t0)
            gc.enable()
    return [b / number for b in best]


def back_to_back(ours: Callable[[], object], peer: Callable[[], object], number: int,
                 repeat_: int) -> tuple[float, float, float]:
    """(ours s/call, peer s/call, ratio): medians over repeats, each repeat timing the two
    back to back, the ratio the median of the per-repeat ratios (load changes cancel)."""
    a, b, ratios = [], [], []
    for _ in range(repeat_):
        x, y = (best_of_interleaved([f], number, 1)[0] for f in (ours, peer))
        a.append(x)
        b.append(y)
        ratios.append(x / y)
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


Case = Callable[[], object] | tuple[Callable[[Any], object], Sequence[Any]]


class Clock:
    """Interleaved repeats: every case runs once per repeat, so a burst of load on a shared
    machine hits all cases alike; figures are per-repeat ``Runs`` (ns per call)."""

    def __init__(self, quick: bool, repeat_: int | None = None) -> None:
        self.quick = quick
        # Many short repeats rather than a few long ones: a burst of load then spoils a few
        # repeats of one case, which the median discards.
        self.repeat = repeat_ or (5 if quick else 15)
        self.budget_ns = 3_000_000 if quick else 50_000_000  # per repeat per case
        self.overhead_ns = self._timer_overhead()

    @staticmethod
    def _timer_overhead() -> float:
        """Cost of ``t0 = pc(); acc += pc() - t0`` with nothing between (the least of several
        runs: load only adds to it, and over-subtracting would flatter the timed call)."""
        runs = []
        for _ in range(7):
            acc = 0
            for _ in repeat(None, 20000):
                t0 = pc()
                acc += pc() - t0
            runs.append(acc / 20000)
        return min(runs)

    @staticmethod
    def _run(case: Case, n: int) -> int:
        """ns for n calls of a case: ``fn`` (no argument) or ``(fn, args)`` (each of ``args``
        in turn, cycling)."""
        if callable(case):
            gc.disable()
            t0 = pc()
            for _ in repeat(None, n):
                case()
            dt = pc() - t0
            gc.enable()
            return dt
        fn, args = case
        calls = list(islice(cycle(args), n))
        gc.disable()
        t0 = pc()
        for a in calls:
            fn(a)
        dt = pc() - t0
        gc.enable()
        return dt

    def calibrate(self, case: Case) -> int:
        """How many calls of a case fill one repeat's budget."""
        n = 1
        while True:
            dt = self._run(case, n)
            if dt > self.budget_ns / 10 or n >= 1_000_000:
                return max(1, int(n * self.budget_ns / max(dt, 1)))
            n *= 4

    def loop(self, cases: Sequence[Case | None]) -> list[Runs | None]:
        """ns per call of each case (None skipped) per repeat, the repeats interleaved."""
        numbers = [self.calibrate(c) if c is not None else 0 for c in cases]
        runs: list[list[float]] = [[] for _ in cases]
        for _ in range(self.repeat):
            for k, case in enumerate(cases):
                if case is not None:
                    runs[k].append(self._run(case, numbers[k]) / numbers[k])
        return [Runs(r) if r else None for r in runs]

    def per_call(self, cases: Sequence[tuple[Callable[[int], Any], Callable[[Any], Any]] | None]
                 ) -> list[Any]:
        """``cases``: [(prepare(n) -> steps, run(steps) -> summed ns, or a tuple of sums)]
        (or None); ns per step of each sum per repeat, the timer's cost subtracted. The cases
        take their steps in turn: ``prepare`` may hand each case the same steps."""
        runs: list[list[list[float]]] = [[] for _ in cases]
        numbers = []
        for case in cases:
            if case is None:
                numbers.append(0)
                continue
            prepare, run = case
            steps = prepare(50)
            t0 = pc()
            run(steps)
            per = max((pc() - t0) / len(steps), 1)
            numbers.append(max(20, min(20000, int(self.budget_ns / per))))
        for _ in range(self.repeat):
            for k, case in enumerate(cases):
                if case is None:
                    continue
                prepare, run = case
                steps = prepare(numbers[k])
                gc.disable()
                total = run(steps)
                gc.enable()
                totals = total if isinstance(total, tuple) else (total,)
                runs[k].append([t / len(steps) - self.overhead_ns for t in totals])
        out: list[Any] = []
        for r in runs:
            if not r:
                out.append(None)
                continue
            columns = [Runs(col) for col in zip(*r)]
            out.append(tuple(columns) if len(columns) > 1 else columns[0])
        return out


def wait_until(condition: Callable[[], object], timeout: float = 30.0,
               interval: float = 0.01) -> bool:
    """True once ``condition()`` holds, False if ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return False


# --- Child processes


class Child:
    """A child process whose output (stderr with stdout) is kept line by line in ``lines``,
    started in a session of its own. ``drain=True``: a thread reads every line as it comes
    (``wait_line`` looks through them); ``drain=False``: lines are read only when asked
    (``wait_line``/``readline``, for a child that talks in turns on stdin and stdout).
    ``ready``: wait for a line containing it; what follows it is ``address``. ``stop()``
    sends SIGINT, then kills it after ``grace`` seconds."""

    def __init__(self, args: Sequence[str], *, ready: str | None = None, timeout: float = 60.0,
                 stdin: bool = False, env: dict[str, str] | None = None,
                 cwd: str | Path | None = None, drain: bool = True) -> None:
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
        full_env.update(env or {})
        self.popen = subprocess.Popen(
            list(args), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env,
            cwd=str(cwd or REPO), start_new_session=True)
        self.pid = self.popen.pid
        self.lines: list[str] = []
        self.address = ""
        self._thread: threading.Thread | None = None
        if drain:
            self._thread = threading.Thread(target=self._drain, daemon=True)
            self._thread.start()
        if ready is not None:
            line = self.wait_line(ready, timeout)
            self.address = line.split(ready, 1)[1].strip()

    def _drain(self) -> None:
        while self.readline() is not None:
            pass

    def readline(self) -> str | None:
        """The next line of output (without its newline; an empty line is ""); None at the
        end."""
        assert self.popen.stdout is not None
        line = self.popen.stdout.readline()
        if not line:
            return None
        self.lines.append(line.rstrip("\n"))
        return self.lines[-1]

    def wait_line(self, word: str, timeout: float = 60.0) -> str:
        """The first line containing ``word`` (from the start of the output)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            lines = self.lines
            for line in lines[seen:]:
                if word in line:
                    return line
            seen = len(lines)
            if self._thread is None:
                if self.readline() is None:
                    break
            elif self.popen.poll() is not None and not self._thread.is_alive():
                break
            else:
                time.sleep(0.01)
        raise RuntimeError(f"{list(self.popen.args)[:4]} did not print {word!r}: "
                           + " | ".join(self.lines[-10:]))

    def tell(self, text: str = "go") -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(text + "\n")
        self.popen.stdin.flush()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> int | None:
        """"stop" on its stdin if it has one (then the end of input), else or then SIGINT,
        then SIGKILL after ``grace`` seconds; the exit status."""
        if self.popen.stdin is not None and self.popen.poll() is None:
            try:
                self.tell("stop")
                self.popen.stdin.close()
                self.popen.wait(grace / 2)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(signal.SIGINT)
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self._thread is not None:
            self._thread.join(5)
        return self.popen.returncode


def free_port(pair: bool = False) -> int:
    """A free TCP port on 127.0.0.1 (``pair``: the next one is free too, for a core's two)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not pair:
            return port
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue


def tf2py_command(*args: str) -> list[str]:
    """The argv of a ``tf2py`` command run by this Python."""
    return [PY, "-m", "tf2py.cli.main", *args]


def start_core(*extra: str) -> Child:
    """A ``tf2py core`` on a free loopback port; its address in ``.address``."""
    return Child(tf2py_command("core", "--address", "tcp://127.0.0.1:0", *extra),
                 ready="ready at ")


# --- Output

"""Lines a command prints from several threads arrive whole: ``tf2py fleet --json`` prints its
stats from the main thread while joins and drops are said from the ingest thread, and a reader
of its lines (a script, the benchmarks' harness) once met two lines joined and an empty one."""

from __future__ import annotations

import subprocess
import sys

from helpers import REPO

WRITERS = """
import threading
from tf2py.cli.common import say

def write(k):
    for i in range(3000):
        say(f"writer {k} line {i} " + "x" * (k * 7))

threads = [threading.Thread(target=write, args=(k,)) for k in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


def test_say_from_six_threads_gives_every_line_whole_and_no_empty_one():
    result = subprocess.run([sys.executable, "-c", WRITERS], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[-1] == ""  # the output ends with a newline
    lines = lines[:-1]
    assert len(lines) == 6 * 3000
    expected = {f"writer {k} line {i} " + "x" * (k * 7) for k in range(6) for i in range(3000)}
    assert set(lines) == expected


def test_the_bench_harness_reads_past_an_empty_line():
    sys.path.insert(0, str(REPO))
    from bench.harness import Child

    child = Child([sys.executable, "-c", "print('one'); print(); print('three')"])
    assert child.wait_line("three", timeout=60) == "three"
    assert child.lines == ["one", "", "three"]
    child.stop()

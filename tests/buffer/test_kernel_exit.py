"""The interpreter's exit while a daemon thread is inside a section of the kernel without the
GIL: the thread parks for good (py_lock.hpp's take_gil_back) and lets the kernel's lock go, so
an exit hook that runs after the kernel's own can still write to the kernel, and the process
ends with status 0 instead of hanging."""

from __future__ import annotations

import subprocess
import sys

import pytest

# The late hook is registered before tf2py is imported, so it runs after the kernel's atexit
# hook (atexit runs the newest first): by then a daemon thread coming back from its section
# parks. A writing thread parks holding the lock exclusively, a reading one shared; the hook
# needs it exclusively either way.
_EXIT_WITH_A_LATE_HOOK = """
import atexit
import threading

import numpy as np

state = {}

def late():
    core = state["core"]
    core.set_transforms(["base"], ["late"], np.full(1, 9, dtype=np.int64),
                        np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]), "late")
    print("late hook stored", core.lookup_transforms("base", "late", np.zeros(1)).shape, flush=True)

atexit.register(late)

from tf2py import BufferCore

core = BufferCore(10.0)
state["core"] = core
n = 20_000
parents, children = ["base"] * n, [f"c{k % 50}" for k in range(n)]
stamps, rows = np.full(n, 5, dtype=np.int64), np.tile([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], (n, 1))
core.set_transforms(parents, children, stamps, rows, "test")
times = np.zeros(n)
rounds = threading.Semaphore(0)

def work():
    while True:  # sections without the GIL, back to back, until the interpreter exits
        if WRITING:
            core.set_transforms(parents, children, stamps, rows, "test")
        else:
            core.lookup_transforms("base", "c7", times)
        rounds.release()

threading.Thread(target=work, daemon=True).start()
for _ in range(3):
    rounds.acquire()
"""


@pytest.mark.parametrize("writing", [True, False], ids=["writing", "reading"])
def test_an_exit_hook_after_the_kernels_can_write_while_a_daemon_thread_is_in_a_section(writing):
    script = _EXIT_WITH_A_LATE_HOOK.replace("WRITING", repr(writing))
    for _ in range(3):  # the exit meets the thread inside a section most times
        try:
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                  timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the exit hung: the late hook waited for the parked thread's lock")
        assert done.returncode == 0, done.stderr
        assert "late hook stored (1, 4, 4)" in done.stdout, done.stdout + done.stderr

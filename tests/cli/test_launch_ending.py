"""`tf2py launch` never leaves a child running after it ends, however it ends: Ctrl-C,
SIGTERM, SIGHUP from a terminal that closed (its writes then fail with EIO), and SIGKILL of
launch itself. Checked with real processes: a core holding its ports, a shell command with a
grandchild, a Python process holding a port; afterwards every PID is gone and every port
binds again."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import socket
import subprocess
import termios
import textwrap
import threading

import pytest

from cli_support import free_bus_address, free_port, wait_for
from helpers import REPO

PROGRAM = textwrap.dedent("""\
    import os, socket, sys, time
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    print("holder", os.getpid(), flush=True)
    time.sleep(600)
    """)


def _launch_file(tmp_path, bus_port: int, holder_port: int):
    holder = tmp_path / "holder.py"
    holder.write_text(PROGRAM)
    path = tmp_path / "robot.yaml"
    path.write_text(textwrap.dedent(f"""\
        launch:
          - process:
              name: core
              cmd: tf2py core --address tcp://127.0.0.1:{bus_port}
          - process:
              name: shell
              cmd: [sh, -c, "sleep 600 & echo grandchild $!; wait"]
          - process:
              name: holder
              cmd: [python, "{holder}", "{holder_port}"]
        """))
    return path


def _gone(pid: int) -> bool:
    """No such process, or a zombie waiting for a reaper (it holds nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pids(output: str) -> list[int]:
    pids = [int(m) for m in re.findall(r"^\[launch\] started \S+ \(pid (\d+)\)", output, re.M)]
    pids += [int(m) for m in re.findall(r"^\[shell\] grandchild (\d+)", output, re.M)]
    pids += [int(m) for m in re.findall(r"^\[holder\] holder (\d+)", output, re.M)]
    return pids


def _ready(output: str) -> bool:
    return ("[shell] grandchild" in output and "[holder] holder" in output
            and "[core]" in output and "ready at" in output)


def _env():
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _check_all_gone(pids, ports):
    assert len(pids) == 5  # core, shell, holder, the shell's grandchild, the holder itself
    wait_for(lambda: all(_gone(p) for p in pids), timeout=30,
             message=f"children left running: {[p for p in pids if not _gone(p)]}")
    wait_for(lambda: all(_port_free(p) for p in ports), timeout=10, message="ports freed")


class _Piped:
    """launch with stdout on a pipe, read on a thread."""

    def __init__(self, args):
        self.popen = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, env=_env(),
                                      start_new_session=True)
        self.lines = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line)

    def output(self):
        return "".join(self.lines)


class _OnTerminal:
    """launch as the session leader of a pseudo-terminal it has as controlling terminal, as
    in a terminal window; ``hang_up()`` closes the terminal (the kernel sends SIGHUP, and
    writes to the terminal fail with EIO from then on)."""

    def __init__(self, args):
        self.master, slave = pty.openpty()

        def controlling_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.popen = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=_env(),
                                      preexec_fn=controlling_terminal)
        os.close(slave)
        self.data = b""
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        # select with a timeout, not a blocking read: a thread blocked in read() on the
        # master keeps it open after close(), and the terminal would never hang up.
        while not self.closing.is_set():
            if not select.select([self.master], [], [], 0.05)[0]:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    def output(self):
        with self.lock:
            return self.data.decode(errors="replace").replace("\r\n", "\n")

    def hang_up(self):
        self.closing.set()
        self.thread.join()
        os.close(self.master)


@pytest.mark.parametrize("ending", ["SIGINT", "SIGTERM", "SIGHUP-terminal-closed", "SIGKILL"])
def test_no_child_outlives_launch_however_it_ends(tmp_path, tf2py_command, ending):
    bus = free_bus_address()
    bus_port = int(bus.rsplit(":", 1)[1])
    holder_port = free_port()
    path = _launch_file(tmp_path, bus_port, holder_port)
    args = [*tf2py_command, "launch", str(path), "--grace", "3"]
    proc = _OnTerminal(args) if ending.startswith("SIGHUP") else _Piped(args)
    pids = []
    try:
        wait_for(lambda: _ready(proc.output()), timeout=60,
                 message=lambda: f"everything started; output so far:\n{proc.output()}")
        pids = _pids(proc.output())
        ports = [bus_port, bus_port + 1, holder_port]
        assert not any(_port_free(p) for p in ports)  # really held while running
        if ending == "SIGHUP-terminal-closed":
            proc.hang_up()
        else:
            proc.popen.send_signal(getattr(signal, ending))
        rc = proc.popen.wait(timeout=60)
        if ending == "SIGKILL":
            assert rc == -signal.SIGKILL
        _check_all_gone(pids, ports)
    finally:
        if proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait()
        for pid in pids:  # only our own processes, by PID, if the test failed
            if not _gone(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_launch_of_a_fifo_or_a_device_is_a_one_line_error(tmp_path, tf2py_command):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        done = subprocess.run([*tf2py_command, "launch", path], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "not a regular file" in lines[0], done.stderr


def test_a_huge_launch_file_is_a_one_line_error(tmp_path, tf2py_command):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * (2 * 1024 * 1024))
    done = subprocess.run([*tf2py_command, "launch", str(big)], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"tf2py launch: error: {big}: too large for a launch file (over 1024 KiB)"]



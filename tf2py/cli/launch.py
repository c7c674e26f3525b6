"""``tf2py launch FILE``: start every process a launch file lists, prefix their output with
their names, and stop them all together (see ``launch_file`` for the format).

Stopping: on Ctrl-C, SIGTERM, SIGHUP, or the exit of a ``required`` process, every child's process
group gets SIGINT, then SIGTERM after the grace period, then SIGKILL after another. A second
Ctrl-C skips to the next step. Only our own children (by PID and process group) are signalled.

However launch ends, no child outlives it: a watchdog process (in its own session, holding the
read end of a pipe whose write end only launch holds) is told each child's process group as
it starts and ends; when the pipe closes with groups still listed (launch was killed with
SIGKILL, or crashed), the watchdog stops those groups (SIGTERM, then SIGKILL after the grace
period), grandchildren of shell commands included. Writes to a closed terminal (SIGHUP) are
dropped instead of failing, so the stop goes on.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from .common import CommandError, number

NAME = "launch"
HELP = "start the processes a launch file lists, and stop them all together"


EPILOG = """\
launch file (YAML, in the style of ROS 2 launch YAML):
  launch:
    - arg: {name: rate, default: "1.0"}            # $(var rate); override: rate:=5
    - process:
        name: core
        cmd: tf2py core                            # or a list: [tf2py, core]
        required: true                             # its exit stops everything
    - static_transform: {frame-id: base_link, child-frame-id: laser, x: 0.2, yaw: 1.57}
    - process:
        cmd: tf2py echo map base_link --rate $(var rate)
        env: {TF2PY_CORE: "$(env TF2PY_CORE tcp://127.0.0.1:7400)"}
        respawn: true                              # restart it when it exits (respawn_delay: 1)
  Keys of process: name, cmd, env, cwd, respawn, respawn_delay, required.
  Keys of static_transform: the static-transform-publisher flags, name, core.
  `tf2py` in cmd runs this tf2py; `python` runs this interpreter.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the launch file (YAML), e.g. "
                        "launch/demo.yaml")
    parser.add_argument("arguments", nargs="*", metavar="NAME:=VALUE", default=[],
                        help="values for the file's 'arg' declarations (optional)")
    parser.add_argument("--grace", metavar="S", default="5.0",
                        help="seconds a process gets to stop after SIGINT, and again after "
                        "SIGTERM, before the next signal (default 5)")
    parser.add_argument("--check", action="store_true",
                        help="check the file and print what would run, without starting anything")


def take_extra_arguments(args: argparse.Namespace, extra: list[str]) -> list[str]:
    """``NAME:=VALUE`` words argparse left over (given after an option, e.g. ``launch FILE
    --check rate:=5``) join ``args.arguments``; the rest is returned (unrecognised)."""
    rest = []
    arguments = list(args.arguments)  # never the parser's shared default list
    for word in extra:
        if ":=" in word and not word.startswith("-"):
            arguments.append(word)
        else:
            rest.append(word)
    args.arguments = arguments
    return rest


class _Output:
    """Writes whole lines to our stdout from many reader threads, each with its prefix. A
    stdout that has gone (closed terminal: EIO; closed pipe) drops the lines: launch must go
    on stopping its children, not fail on a message."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stream = sys.stdout.buffer
        self.gone = False

    def line(self, prefix: str, text: bytes) -> None:
        with self.lock:
            if self.gone:
                return
            try:
                self.stream.write(b"[" + prefix.encode() + b"] " + text.rstrip(b"\r\n") + b"\n")
                self.stream.flush()
            except (OSError, ValueError):
                self.gone = True

    def say(self, text: str) -> None:
        self.line("launch", text.encode())


class _Child:
    """One process of the launch file, across its respawns."""

    def __init__(self, spec: Any, output: _Output, watchdog: Any = None) -> None:
        self.spec = spec
        self.output = output
        self.watchdog = watchdog
        self.popen: Any = None  # subprocess.Popen once started
        self.reader: threading.Thread | None = None
        self.respawn_at: float | None = None
        self.killed = False
        self.reported = False
        self.pids: list[int] = []

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.returncode is None

    def start(self) -> None:
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.spec.env)
        try:
            # Its own session and process group: a terminal's Ctrl-C reaches launch only, and
            # launch can signal the child together with anything it started.
            self.popen = subprocess.Popen(
                self.spec.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, env=env, cwd=self.spec.cwd, start_new_session=True,
            )
        except OSError as exc:
            self.popen = None
            raise CommandError(f"cannot start {self.spec.name} ({self.spec.cmd[0]}): "
                               f"{exc.strerror}") from None
        self.pids.append(self.popen.pid)
        if self.watchdog is not None:
            self.watchdog.started(self.popen.pid)
        self.reported = False
        self.output.say(f"started {self.spec.name} (pid {self.popen.pid}): "
                        f"{' '.join(self.spec.cmd)}")
        self.reader = threading.Thread(target=self._read, args=(self.popen,), daemon=True,
                                       name=f"launch-output-{self.spec.name}")
        self.reader.start()

    def _read(self, popen: Any) -> None:
        for line in iter(popen.stdout.readline, b""):
            self.output.line(self.spec.name, line)
        popen.stdout.close()

    def poll(self) -> int | None:
        """The exit code once the process has ended (its output drained), else None."""
        if self.popen is None:
            return None
        rc: int | None = self.popen.poll()
        if rc is not None and self.reader is not None:
            self.reader.join(timeout=1.0)
        return rc

    def signal(self, sig: int) -> None:
        """Signal the child's process group (it leads its own), never anything else."""
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def describe_exit(self, rc: int, asked_to_stop: bool = False) -> str:
        who = f"{self.spec.name} (pid {self.popen.pid})"
        if rc == 0:
            return f"{who} finished cleanly"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"{who} was stopped by {name}"
        if asked_to_stop:
            return f"{who} stopped with exit code {rc}"
        return f"{who} died with exit code {rc}"


_WATCHDOG = r"""
import os, signal, sys, time
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(sig, signal.SIG_IGN)
grace = float(sys.argv[1])
groups = set()
for line in sys.stdin.buffer:  # until launch's end of the pipe closes, however it ends
    try:
        op, pgid = line[:1], int(line[1:])
    except ValueError:
        continue
    if op == b"+":
        groups.add(pgid)
    else:
        groups.discard(pgid)

def alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True

for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
    live = [g for g in groups if alive(g)]
    if not live:
        break
    for g in live:
        try:
            os.killpg(g, sig)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(alive(g) for g in live):
        time.sleep(0.02)
"""


class _Watchdog:
    """The process that stops our children's process groups if launch dies without doing
    it (SIGKILL): see the module doc."""

    def __init__(self, grace: float):
        self.popen: Any = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, repr(min(grace, 5.0))],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )

    def _send(self, line: bytes) -> None:
        try:
            self.popen.stdin.write(line)
            self.popen.stdin.flush()
        except (OSError, ValueError):
            pass

    def started(self, pgid: int) -> None:
        self._send(b"+%d\n" % pgid)

    def ended(self, pgid: int) -> None:
        self._send(b"-%d\n" % pgid)

    def close(self) -> None:
        try:
            self.popen.stdin.close()
        except OSError:
            pass
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass


class _Launch:
    def __init__(self, specs: list[Any], grace: float) -> None:
        self.output = _Output()
        self.watchdog: _Watchdog | None = None
        self.children = [_Child(spec, self.output) for spec in specs]
        self.grace = grace
        self.failed = False
        self.failure = ""  # the first failure, said on stderr in one line at the end
        self.exit_code = 0
        self.stop_requests = 0
        self.stop_reason = ""

    def _fail(self, why: str) -> None:
        self.failed = True
        self.failure = self.failure or why

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stop_requests += 1
        if not self.stop_reason:
            self.stop_reason = f"{signal.Signals(signum).name} received"

    def run(self) -> int:
        # SIGHUP too: children run in their own sessions, so a closed terminal reaches only
        # launch, which must not leave them running.
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            self.watchdog = _Watchdog(self.grace)
            for child in self.children:
                child.watchdog = self.watchdog
            try:
                for child in self.children:
                    if self.stop_requests:
                        break
                    child.start()
            except CommandError as exc:
                self.output.say(str(exc))
                self._fail(str(exc))
                self.stop_reason = "a process could not be started"
            else:
                self._supervise()
            self._stop_all()
        finally:
            if self.watchdog is not None:
                self.watchdog.close()  # stops whatever group is still listed
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.failed and self.exit_code == 0:
            self.exit_code = 1
        if self.exit_code != 0:  # the contract's one line on stderr (the story is on stdout)
            print(f"tf2py launch: error: {self.failure or 'a process failed'}",
                  file=sys.stderr, flush=True)
        return self.exit_code

    def _supervise(self) -> None:
        while not self.stop_requests and not self.stop_reason:
            time.sleep(0.05)
            now = time.monotonic()
            for child in self.children:
                if child.respawn_at is not None:
                    if now >= child.respawn_at:
                        child.respawn_at = None
                        try:
                            child.start()
                        except CommandError as exc:
                            self.output.say(str(exc))
                            self._fail(str(exc))
                    continue
                if not child.running:
                    continue
                rc = child.poll()
                if rc is None:
                    continue
                child.reported = True
                self.output.say(child.describe_exit(rc))
                if child.spec.required:
                    self.stop_reason = f"{child.spec.name} is required and exited"
                    self._fail(f"{child.spec.name} is required and exited "
                               f"({_exit_words(rc)})")
                    self.exit_code = rc if rc > 0 else 1
                elif child.spec.respawn:
                    self.output.say(f"respawning {child.spec.name} in "
                                    f"{child.spec.respawn_delay:g} s")
                    child.respawn_at = now + child.spec.respawn_delay
                elif rc != 0:
                    self._fail(f"{child.spec.name} {_exit_words(rc)}")
            if not any(c.running or c.respawn_at is not None for c in self.children):
                self.stop_reason = "every process has exited"

    def _stop_all(self) -> None:
        running = [c for c in self.children if c.running]
        if running:
            self.output.say(f"stopping everything: {self.stop_reason}")
        steps = [(signal.SIGINT, self.grace), (signal.SIGTERM, self.grace), (signal.SIGKILL, 5.0)]
        requests = self.stop_requests
        for sig, grace in steps:
            running = [c for c in self.children if c.running and c.popen.poll() is None]
            if not running:
                break
            if sig == signal.SIGKILL:
                for child in running:
                    child.killed = True
                self._fail(f"{', '.join(c.spec.name for c in running)} did not stop on SIGINT "
                           f"or SIGTERM and {'was' if len(running) == 1 else 'were'} killed")
                self.output.say(f"killing {', '.join(c.spec.name for c in running)} "
                                "(did not stop on SIGINT or SIGTERM)")
            for child in running:
                child.signal(sig)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                if all(c.popen.poll() is not None for c in running):
                    break
                if self.stop_requests > requests and sig != signal.SIGKILL:
                    # Ctrl-C pressed again: do not wait out the grace period.
                    requests = self.stop_requests
                    break
                time.sleep(0.02)
        for child in self.children:
            if child.popen is None:
                continue
            try:
                child.popen.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            # Whatever the child left behind in its own process group goes too.
            child.signal(signal.SIGKILL)
            if child.watchdog is not None:
                for pid in child.pids:
                    child.watchdog.ended(pid)
            if child.reader is not None:
                child.reader.join(timeout=1.0)
            if not child.reported and child.popen.returncode is not None:
                child.reported = True
                self.output.say(child.describe_exit(child.popen.returncode, asked_to_stop=True))


def _exit_words(rc: int) -> str:
    """How a process ended, in words: "exited with code 3", "killed by SIGSEGV"."""
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with code {rc}"


def run(args: argparse.Namespace) -> int:
    from .launch_file import LaunchFileError, load, parse_arguments

    try:
        grace = number(args.grace)
    except ValueError:
        grace = -1.0
    if not grace >= 0:
        raise CommandError(f"--grace must be zero or more seconds, got {args.grace!r}", 2)
    try:
        overrides = parse_arguments(args.arguments)
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None
    try:
        specs = load(args.file, overrides)
    except LaunchFileError as exc:
        raise CommandError(str(exc)) from None
    if args.check:
        for spec in specs:
            flags = [f for f in ("required", "respawn") if getattr(spec, f)]
            print(f"{spec.name}: {' '.join(spec.cmd)}"
                  + (f"  [{', '.join(flags)}]" if flags else ""))
        return 0
    return _Launch(specs, grace).run()

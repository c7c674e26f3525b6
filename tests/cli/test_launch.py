"""`tf2py launch`: every process starts with its output prefixed, all stop together (checked
by PID), a required process's exit ends the launch, failures give a non-zero exit, and a
malformed file is refused with FILE:LINE before anything starts."""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap

import pytest

from cli_support import free_bus_address, wait_for
from tf2py import Buffer, TransformListener

# A process that prints a line, then waits to be stopped.
LOOP = "python -c \"import time; print('hello from', __import__('os').getpid()); time.sleep(600)\""


LOOP_QUOTED = LOOP.replace('"', '\\"')  # for a YAML "double-quoted" string


def write(tmp_path, text, name="test.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def started_pids(output: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\[launch\] started (\S+) \(pid (\d+)\)", output, re.M)}


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def launch(spawn, tf2py_command, path, *args, env=None):
    return spawn([*tf2py_command, "launch", str(path), *args], env=env)


def test_launch_prefixes_output_and_stops_every_process_on_ctrl_c(tmp_path, spawn,
                                                                   tf2py_command):
    path = write(tmp_path, f"""\
        launch:
          - process:
              name: first
              cmd: {LOOP}
          - process:
              name: second
              cmd: [python, -c, "import time; print('line one'); print('line two'); time.sleep(600)"]
        """)
    proc = launch(spawn, tf2py_command, path)
    proc.wait_for_line("[second] line two")
    first = proc.wait_for_line("[first] hello from")
    pids = started_pids(proc.output())
    assert set(pids) == {"first", "second"}
    assert first == f"[first] hello from {pids['first']}"
    proc.signal(signal.SIGINT)
    assert proc.wait() == 0
    assert all(gone(pid) for pid in pids.values())
    assert "[launch] stopping everything: SIGINT received" in proc.output()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_launch_stops_everything_on_sigterm_and_sighup(tmp_path, spawn, tf2py_command, sig):
    path = write(tmp_path, f"""\
        launch:
          - process: {{name: a, cmd: "{LOOP_QUOTED}"}}
          - process: {{name: b, cmd: "{LOOP_QUOTED}"}}
        """)
    proc = launch(spawn, tf2py_command, path)
    proc.wait_for_line("[a] hello")
    proc.wait_for_line("[b] hello")
    pids = started_pids(proc.output())
    proc.signal(sig)
    assert proc.wait() == 0
    assert all(gone(pid) for pid in pids.values())
    assert f"[launch] stopping everything: {sig.name} received" in proc.output()


def test_launch_also_stops_what_a_process_started(tmp_path, spawn, tf2py_command):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""\
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print("grandchild", child.pid, flush=True)
        time.sleep(600)
        """))
    path = write(tmp_path, f"""\
        launch:
          - process: {{name: parent, cmd: [python, "{script}"]}}
        """)
    proc = launch(spawn, tf2py_command, path)
    grandchild = int(proc.wait_for_line("[parent] grandchild").split()[-1])
    proc.signal(signal.SIGINT)
    proc.wait()
    wait_for(lambda: gone(grandchild), timeout=10)


def test_launch_kills_a_process_that_ignores_sigint_and_sigterm(tmp_path, spawn, tf2py_command):
    path = write(tmp_path, """\
        launch:
          - process:
              name: stubborn
              cmd: [python, -c, "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"]
        """)  # noqa: E501 - a one-line python -c command in the YAML
    proc = launch(spawn, tf2py_command, path, "--grace", "0.3")
    proc.wait_for_line("[stubborn] ready")
    pid = started_pids(proc.output())["stubborn"]
    proc.signal(signal.SIGINT)
    assert proc.wait() == 1  # a process that had to be killed is a failure
    assert "[launch] killing stubborn (did not stop on SIGINT or SIGTERM)" in proc.output()
    assert "[launch] stubborn (pid %d) was stopped by SIGKILL" % pid in proc.output()
    assert "tf2py launch: error: stubborn did not stop on SIGINT or SIGTERM and was killed" \
        in proc.output()
    assert gone(pid)


def test_exit_of_a_required_process_stops_all_and_exits_non_zero(tmp_path, spawn,
                                                                 tf2py_command):
    # vital exits once the test has seen long running (a file says so), not after a time.
    go = tmp_path / "go"
    path = write(tmp_path, f"""\
        launch:
          - process:
              name: long
              cmd: {LOOP}
          - process:
              name: vital
              cmd: [python, -c, "import os, time; [time.sleep(0.01) for _ in iter(lambda: os.path.exists('{go}'), True)]; raise SystemExit(3)"]
              required: true
        """)  # noqa: E501 - a one-line python -c command in the YAML
    proc = launch(spawn, tf2py_command, path)
    proc.wait_for_line("[long] hello")
    go.touch()
    assert proc.wait(timeout=30) == 3
    pids = started_pids(proc.output())
    assert all(gone(pid) for pid in pids.values())
    out = proc.output()
    assert f"[launch] vital (pid {pids['vital']}) died with exit code 3" in out
    assert "[launch] stopping everything: vital is required and exited" in out


def test_a_required_process_that_exits_cleanly_still_fails_the_launch(tmp_path, spawn,
                                                                      tf2py_command):
    path = write(tmp_path, f"""\
        launch:
          - process: {{name: long, cmd: "{LOOP_QUOTED}"}}
          - process: {{name: vital, cmd: [python, -c, "pass"], required: true}}
        """)
    proc = launch(spawn, tf2py_command, path)
    assert proc.wait(timeout=30) == 1
    assert all(gone(pid) for pid in started_pids(proc.output()).values())


def test_a_failed_launch_says_why_in_one_line_on_stderr(tmp_path, tf2py):
    path = write(tmp_path, """\
        launch:
          - process: {name: vital, cmd: [python, -c, "raise SystemExit(4)"], required: true}
        """)
    result = tf2py("launch", str(path))
    assert result.returncode == 4
    assert result.stderr == "tf2py launch: error: vital is required and exited (exited with " \
        "code 4)\n"
    assert "[launch] stopping everything" not in result.stderr  # the story stays on stdout


def test_a_failed_process_makes_the_exit_code_non_zero(tmp_path, spawn, tf2py_command):
    path = write(tmp_path, f"""\
        launch:
          - process: {{name: long, cmd: "{LOOP_QUOTED}"}}
          - process: {{name: broken, cmd: [python, -c, "raise SystemExit(5)"]}}
        """)
    proc = launch(spawn, tf2py_command, path)
    proc.wait_for_line("died with exit code 5")
    proc.wait_for_line("[long] hello")
    assert "stopping everything" not in proc.output()  # the others keep running
    proc.signal(signal.SIGINT)
    assert proc.wait() == 1
    assert "tf2py launch: error: broken exited with code 5" in proc.output()


def test_launch_ends_by_itself_when_every_process_has_finished(tmp_path, tf2py):
    path = write(tmp_path, """\
        launch:
          - process: {name: one, cmd: [python, -c, "print(1)"]}
          - process: {name: two, cmd: [python, -c, "print(2)"]}
        """)
    result = tf2py("launch", str(path))
    assert result.returncode == 0
    assert "[one] 1" in result.stdout and "[two] 2" in result.stdout


def test_respawn_restarts_a_process_that_exits(tmp_path, spawn, tf2py_command):
    path = write(tmp_path, """\
        launch:
          - process:
              name: flaky
              cmd: [python, -c, "print('up', flush=True)"]
              respawn: true
              respawn_delay: 0.1
        """)
    proc = launch(spawn, tf2py_command, path)
    wait_for(lambda: proc.output().count("[flaky] up") >= 3, timeout=20)
    proc.signal(signal.SIGINT)
    assert proc.wait() == 0
    assert "[launch] respawning flaky in 0.1 s" in proc.output()


def test_env_and_substitutions_reach_the_process(tmp_path, tf2py):
    path = write(tmp_path, """\
        launch:
          - arg: {name: greeting, default: hello}
          - process:
              name: show
              cmd: [python, -c, "import os, sys; print(os.environ['A'], sys.argv[1:])", "$(var greeting)", "$(env TF2PY_TEST_SET)", "$(env TF2PY_TEST_UNSET fallback)", "$(dirname)"]
              env: {A: "from env"}
        """)  # noqa: E501 - a one-line python -c command in the YAML
    result = tf2py("launch", str(path), "greeting:=bonjour", env={"TF2PY_TEST_SET": "set"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[show] from env ['bonjour', 'set', 'fallback', '{tmp_path}']" in result.stdout


def test_static_transform_action_publishes_to_listeners(tmp_path, spawn, tf2py_command):
    address = free_bus_address()
    path = write(tmp_path, """\
        launch:
          - process: {name: core, cmd: tf2py core, required: true}
          - static_transform:
              frame-id: base_link
              child-frame-id: laser
              x: 0.25
              z: -1e-05
              yaw: 1.5707963267948966
        """)
    proc = launch(spawn, tf2py_command, path, env={"TF2PY_CORE": address})
    proc.wait_for_line("[static_transform_laser] Spinning until stopped")
    buffer = Buffer()
    with TransformListener(buffer, core=address):
        t = buffer.lookup_transform("base_link", "laser", 0, timeout=20)
    tr, q = t.transform.translation, t.transform.rotation
    assert (tr.x, tr.y, tr.z) == (0.25, 0.0, -1e-05)
    assert abs(abs(q.z) - 2 ** -0.5) < 1e-12 and abs(abs(q.w) - 2 ** -0.5) < 1e-12
    pids = started_pids(proc.output())
    proc.signal(signal.SIGINT)
    assert proc.wait() == 0
    assert all(gone(pid) for pid in pids.values())


def test_check_lists_what_would_run_without_starting_it(tmp_path, tf2py):
    path = write(tmp_path, """\
        launch:
          - process: {name: core, cmd: tf2py core, required: true}
          - static_transform: {frame-id: a, child-frame-id: b, x: 1}
        """)
    result = tf2py("launch", str(path), "--check")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"core: {sys.executable} -m tf2py.cli.main core  [required]",
        f"static_transform_b: {sys.executable} -m tf2py.cli.main static-transform-publisher "
        "--frame-id=a --child-frame-id=b --x=1.0",
    ]


# Each malformed file starts with a valid process that would create 'started' if it ran.
FIRST = """\
launch:
  - process:
      cmd: [python, -c, "open('started', 'w')"]
"""


@pytest.mark.parametrize("rest, line, problem", [
    ("  - process: {cmd: [python, -c, 'pass']\n", 5,
     "invalid YAML: expected ',' or '}', but got '<stream end>' (while parsing a flow mapping "
     "started on line 4)"),
    ("  - process:\n      name: x\n     cmd: y\n", 6,
     "invalid YAML: expected <block end>, but found '<block mapping start>' (while parsing a "
     "block mapping started on line 4)"),
    ("  - node: {pkg: demo, exec: talker}\n", 4,
     "unknown action 'node'; known actions: process, static_transform, arg (ROS packages, nodes "
     "and includes do not exist in tf2py)"),
    ("  - process:\n      name: nocmd\n", 4, "process needs a 'cmd' (the command line to run)"),
    ("  - process:\n      cmd: [python]\n      respawn: maybe\n", 6,
     "respawn must be true or false, got 'maybe'"),
    ("  - process:\n      cmd: [python]\n      env: [1, 2]\n", 6,
     "env entry must be a map of keys to values, got the single value '1'"),
    ("  - process:\n      cmd: {a: b}\n", 5, "cmd must be a single value, not a map"),
    ("  - process:\n      cmd: [python]\n      restart: true\n", 6,
     "unknown key 'restart' in process; known keys: name, cmd, env, cwd, respawn, "
     "respawn_delay, required"),
    ("  - process:\n      cmd: [python]\n      respawn: true\n      required: true\n", 4,
     "a process cannot be both respawn: true and required: true (a required process ends the "
     "launch when it exits)"),
    ("  - process:\n      cmd: no-such-program-tf2py\n", 5,
     "program 'no-such-program-tf2py' not found on PATH"),
    ("  - process:\n      cmd: \"$(env TF2PY_TEST_UNSET)\"\n", 5,
     "environment variable 'TF2PY_TEST_UNSET' is not set (write $(env TF2PY_TEST_UNSET DEFAULT) "
     "to give a default)"),
    ("  - process:\n      cmd: [python, \"$(var nothing)\"]\n", 5,
     "unknown launch argument 'nothing' (declare it earlier with an 'arg' action)"),
    ("  - process:\n      name: python\n      cmd: [python]\n", 4,
     "two processes are named 'python' (the other is on line 2); give one a different 'name'"),
    ("  - static_transform:\n      frame-id: a\n", 4, "static_transform needs 'child-frame-id'"),
    ("  - static_transform:\n      frame-id: a\n      child-frame-id: b\n      x: far\n", 7,
     "x must be a number, got 'far'"),
    ("  - static_transform:\n      frame-id: a\n      child-frame-id: b\n      qw: 1\n"
     "      yaw: 1\n", 4, "Cannot specify both quaternion and Euler rotations"),
    ("  - static_transform:\n      frame-id: a\n      child-frame-id: b\n      height: 1\n", 7,
     "unknown key 'height' in static_transform; known keys: frame-id, child-frame-id, x, y, z, "
     "qx, qy, qz, qw, roll, pitch, yaw, name, core"),
    ("  - process:\n      cmd: [python]\n    static_transform: {}\n", 4,
     "each action is a map with exactly one key (process, static_transform or arg), got "
     "['process', 'static_transform']"),
    ("nodes: []\n", 4, "unknown top-level key 'nodes'; a launch file has one top-level key, "
     "'launch:', holding a list of actions"),
], ids=["bad-yaml-flow", "bad-yaml-indent", "unknown-action", "missing-cmd", "bool-type",
        "env-type", "cmd-type", "unknown-key", "respawn-and-required", "no-program",
        "unset-env", "unknown-var", "duplicate-name", "missing-child-frame", "number-type",
        "quaternion-and-euler", "unknown-static-key", "two-actions-in-one", "top-level-key"])
def test_malformed_file_is_refused_with_file_line_before_anything_starts(tmp_path, tf2py, rest,
                                                                        line, problem):
    path = write(tmp_path, FIRST + rest)
    result = tf2py("launch", str(path), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == f"tf2py launch: error: {path}:{line}: {problem}"
    assert result.stdout == ""
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("text, line, problem", [
    ("", 1, "the file is empty; expected a top-level 'launch:' list"),
    ("launch:\n", 1, "'launch:' must hold a list of actions (lines starting with '- '), got "
     "nothing"),
    ("launch: []\n", 1, "nothing to launch: the 'launch:' list has no process or "
     "static_transform"),
    ("- process: {cmd: x}\n", 1, "the top level must be a map of keys to values, got a list"),
], ids=["empty", "launch-null", "launch-empty", "top-level-list"])
def test_files_without_processes_are_refused(tmp_path, tf2py, text, line, problem):
    path = write(tmp_path, text)
    result = tf2py("launch", str(path))
    assert result.returncode == 1
    assert result.stderr.strip() == f"tf2py launch: error: {path}:{line}: {problem}"


def test_a_missing_file_is_refused_in_one_line(tmp_path, tf2py):
    result = tf2py("launch", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1
    assert result.stderr.strip() == (f"tf2py launch: error: {tmp_path / 'nope.yaml'}: cannot read "
                                     "the launch file: No such file or directory")


def test_an_unknown_command_line_argument_is_refused(tmp_path, tf2py):
    path = write(tmp_path, FIRST)
    result = tf2py("launch", str(path), "speed:=3", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"tf2py launch: error: {path}: unknown launch argument(s) on "
                                     "the command line: speed (the file declares: none)")
    assert not (tmp_path / "started").exists()


def test_ros_style_executable_with_env_list_and_cwd(tmp_path, tf2py):
    (tmp_path / "work").mkdir()
    path = write(tmp_path, """\
        launch:
          - executable:
              name: ros-style
              cmd: python -c "import os; print(os.environ['GREETING'], os.path.basename(os.getcwd()))"
              cwd: $(dirname)/work
              env:
                - {name: GREETING, value: hi}
        """)
    result = tf2py("launch", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ros-style] hi work" in result.stdout

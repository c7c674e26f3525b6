"""The README and docs/ run as written: every ```python block of README.md and docs/*.md is
extracted and run in a subprocess, against a real core and buffer server started here on
free ports (TF2PY_CORE and TF2PY_SERVER point at them), each with a deadline; every
`tf2py X` command they name answers `tf2py X --help`.

How a block runs is said visibly in the document, by an HTML comment on the line before it
(no guessing here):

    <!-- readme-test: background -->              runs in the background while the blocks
                                                  after it in the same file run; stopped after
    <!-- readme-test: continues -->               runs in the same process as the block before
                                                  (it uses that block's names)
    <!-- readme-test: before `tf2py keygen site` -->   a command run to completion first
    <!-- readme-test: with `tf2py ... ` -->       a command kept running during the block
    <!-- readme-test: own core -->                TF2PY_CORE names free ports of its own (for a
                                                  block that starts a core itself)

Directives combine with ';'. Each file's blocks run in one fresh folder, in order.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import REPO, Proc, ros_domain_id

pytestmark = pytest.mark.timeout(900)

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = re.compile(r"^\s*<!--\s*readme-test:(.*?)-->\s*$")
COMMAND = re.compile(r"`([^`]+)`")
BLOCK_DEADLINE_S = 180.0  # per block; generous, for a loaded machine


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str
    directives: list[str] = field(default_factory=list)

    def says(self, directive: str) -> bool:
        """Whether the block's comment gives ``directive`` (words in brackets after it are a
        note for the reader)."""
        return any(d == directive or d.startswith(directive + " ") for d in self.directives)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of ``path``, each with the directives of the comment before it."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            match = MARKER.match(before)
            directives = [d.strip() for d in match.group(1).split(";")] if match else []
            blocks.append(Block(path, start + 1, "\n".join(lines[start + 1:j]) + "\n",
                                [d for d in directives if d]))
            i = j
        i += 1
    return blocks


def tf2py_argv(command: str) -> list[str]:
    """A documented shell command as argv, `tf2py` being this checkout's."""
    argv = shlex.split(command)
    if argv and argv[0] == "tf2py":
        return [sys.executable, "-m", "tf2py.cli.main", *argv[1:]]
    return argv


def free_bus() -> str:
    from cli.cli_support import free_bus_address

    return free_bus_address()


@pytest.fixture(scope="module")
def bus(tmp_path_factory):
    """A real `tf2py core` and `tf2py server` on free ports; their addresses."""
    procs = []
    try:
        core = Proc([*tf2py_argv("tf2py core --address tcp://127.0.0.1:0")])
        procs.append(core)
        line = core.wait_for_line("ready at ", timeout=120)
        core_address = line.split("ready at ", 1)[1].strip()
        server = Proc(tf2py_argv("tf2py server --address tcp://127.0.0.1:0"),
                      env={"TF2PY_CORE": core_address})
        procs.append(server)
        line = server.wait_for_line("ready at ", timeout=120)
        server_address = line.split("ready at ", 1)[1].strip()
        yield {"TF2PY_CORE": core_address, "TF2PY_SERVER": server_address}
    finally:
        for proc in reversed(procs):
            proc.stop()


def _environment(bus: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(bus)
    env.pop("TF2PY_KEYS", None)
    # ros2:// blocks stay on this host, on a domain of their own.
    env["ROS_DOMAIN_ID"] = str(ros_domain_id(100, 161))
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    for name in ("ROS_LOCALHOST_ONLY", "ROS_STATIC_PEERS", "CYCLONEDDS_URI"):
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _sessions(blocks: list[Block]) -> list[list[Block]]:
    """Blocks grouped into the processes that run them ("continues" joins the one before)."""
    sessions: list[list[Block]] = []
    for block in blocks:
        if block.says("continues") and sessions:
            sessions[-1].append(block)
        else:
            sessions.append([block])
    return sessions


def _commands(session: list[Block], kind: str) -> list[str]:
    found = []
    for block in session:
        for directive in block.directives:
            if directive.startswith(kind + " "):
                found.extend(COMMAND.findall(directive))
    return found


def run_document(path: Path, bus: dict[str, str], folder: Path) -> None:
    env = _environment(bus)
    background: list[Proc] = []
    try:
        for session in _sessions(python_blocks(path)):
            first = session[0]
            session_env = dict(env)
            if any(b.says("own core") for b in session):
                session_env["TF2PY_CORE"] = free_bus()
            for command in _commands(session, "before"):
                done = subprocess.run(tf2py_argv(command), cwd=folder, env=session_env,
                                      capture_output=True, text=True, timeout=BLOCK_DEADLINE_S)
                assert done.returncode == 0, (
                    f"{first.where}: `{command}` failed:\n{done.stdout}{done.stderr}")
            helpers = [Proc(tf2py_argv(c), env=session_env, cwd=folder)
                       for c in _commands(session, "with")]
            for helper in helpers:  # running (its first line out) before the block starts
                helper.wait_for_line(lambda line: True, timeout=120)
            code = "".join(block.code for block in session)
            script = folder / f"block_{first.line}.py"
            script.write_text(code)
            if first.says("background"):
                background.append(Proc([sys.executable, str(script)], env=session_env,
                                       cwd=folder))
                continue
            try:
                done = subprocess.run([sys.executable, str(script)], cwd=folder,
                                      env=session_env, capture_output=True, text=True,
                                      timeout=BLOCK_DEADLINE_S, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{first.where}: still running after {BLOCK_DEADLINE_S:g} s")
            finally:
                for helper in helpers:
                    helper.stop()
            assert done.returncode == 0, (
                f"{first.where}: the block failed (exit {done.returncode}):\n{code}\n"
                f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
        for proc in background:
            assert proc.popen.poll() is None, (
                f"{path.name}: a background block ended early:\n{proc.output()}")
    finally:
        for proc in background:
            proc.stop()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", [p for p in DOCUMENTS if python_blocks(p)],
                         ids=lambda p: p.name)
def test_python_blocks_run_as_written(path, bus, tmp_path):
    run_document(path, bus, tmp_path)


def named_commands() -> dict[str, str]:
    """Every `tf2py X` command line of the documents (an inline code span or a code-block
    line that starts with it, or runs it after `&&` or from .venv/bin): X -> where."""
    found: dict[str, str] = {}
    command = re.compile(r"(?:^|&& |bin/)tf2py ([a-z][a-z0-9-]*)")
    for path in DOCUMENTS:
        text = path.read_text()
        code = [*re.findall(r"`([^`\n]+)`", text),
                *(line.strip() for line in re.findall(r"^(?: {4}|\t)(.+)$", text, re.M)),
                *(line.strip() for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
                  for line in block.splitlines())]
        for line in code:
            for match in command.finditer(line.strip()):
                found.setdefault(match.group(1), path.name)
    return found


def test_documents_name_commands():
    # The extraction finds the README's commands (a check on the check).
    assert {"core", "echo", "launch", "doctor"} <= set(named_commands())


@pytest.mark.parametrize("command", sorted(named_commands()))
def test_every_named_command_exists(command):
    done = subprocess.run(tf2py_argv(f"tf2py {command} --help"), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, (
        f"`tf2py {command}` (named in {named_commands()[command]}) has no --help:\n"
        f"{done.stderr}")
    assert "usage: tf2py" in done.stdout


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    command = readme.split("**Run the tests:**", 1)[1].strip().splitlines()[0].strip()
    ci_lines = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert command in ci_lines, f"{command!r} is not a line of .ci/run"


def test_the_readme_install_shows_the_build_progress():
    # The first two commands compile the kernel: not with pip's -q, which hides it for minutes.
    readme = (REPO / "README.md").read_text()
    first = [line.strip() for line in readme.splitlines() if line.startswith("    python3 -m venv")]
    assert len(first) >= 2 and all(" -q " not in c.split("&&")[1] for c in first[:2])
    assert all("pip install -v " in c for c in first[:2])

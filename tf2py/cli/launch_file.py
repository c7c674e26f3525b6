"""Launch files for ``tf2py launch``: a small YAML format in the style of ROS 2 launch YAML.

    launch:
      - arg:
          name: rate
          default: "1.0"
      - process:
          name: core
          cmd: tf2py core
          required: true
      - static_transform:
          frame-id: base_link
          child-frame-id: laser
          x: 0.2
          yaw: 1.5708
      - process:
          name: echo
          cmd: [tf2py, echo, map, base_link, --rate, $(var rate)]
          env: {TF2PY_CORE: "$(env TF2PY_CORE tcp://127.0.0.1:7400)"}
          respawn: true

Actions: ``process`` (alias ``executable``): ``cmd`` (a string split like a shell would, or a
list), ``name``, ``env`` (a map, or ROS's list of ``{name, value}``), ``cwd``, ``respawn``,
``respawn_delay`` (seconds), ``required``. ``static_transform``: the flags of ``tf2py
static-transform-publisher`` as keys (``frame-id``, ``child-frame-id``, ``x`` ``y`` ``z``,
``qx`` ``qy`` ``qz`` ``qw`` or ``roll`` ``pitch`` ``yaw``; underscores also accepted), plus
``name`` and ``core``. ``arg``: ``name`` and ``default``, overridden on the command line with
``NAME:=VALUE`` and used as ``$(var NAME)``.

Substitutions in strings: ``$(env VAR)``, ``$(env VAR default)``, ``$(var NAME)``,
``$(dirname)`` (the launch file's folder). A command named ``tf2py`` runs this tf2py with
this interpreter; ``python`` and ``python3`` run this interpreter.

Everything is checked before anything starts: a problem is a ``LaunchFileError`` whose text is
``FILE:LINE: problem``.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..transport.yaml_files import YamlFileError, compose_yaml, read_text_file
from .common import cut

__all__ = ["LaunchFileError", "ProcessSpec", "load", "parse_arguments"]

ACTIONS = ("process", "static_transform", "arg")
PROCESS_KEYS = ("name", "cmd", "env", "cwd", "respawn", "respawn_delay", "required")
STATIC_NUMBER_KEYS = ("x", "y", "z", "qx", "qy", "qz", "qw", "roll", "pitch", "yaw")
STATIC_KEYS = ("frame-id", "child-frame-id", *STATIC_NUMBER_KEYS, "name", "core")
RESERVED_NAMES = ("launch",)

_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
# Stand-ins for substitutions while a cmd string is split into words, so that a value with
# spaces stays one word (as in ROS 2 launch) and a substitution's own spaces split nothing.
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")

#: The largest launch file read (a launch file is a page of YAML; /dev/zero is not one).
MAX_LAUNCH_FILE_BYTES = 1024 * 1024
#: The longest a string may grow by substitution (``$(var ...)`` of ``$(var ...)``, ...).
MAX_SUBSTITUTED_CHARS = 64 * 1024


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class LaunchFileError(Exception):
    """A launch file that cannot be run; ``str()`` is ``FILE:LINE: problem``."""

    def __init__(self, path: str, line: int | None, problem: str):
        self.path = path
        self.line = line
        # One line, with the file's own text (which may be anything: tf2py launch /etc/passwd)
        # quoted at most a few lines long.
        problem = cut(problem, 300)
        self.problem = problem
        where = f"{cut(str(path), 200)}:{line}" if line is not None else cut(str(path), 200)
        super().__init__(f"{where}: {problem}")


@dataclass
class ProcessSpec:
    """One process to start: its name, argv, extra environment, and what to do when it ends."""

    name: str
    cmd: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    respawn: bool = False
    respawn_delay: float = 1.0
    required: bool = False
    line: int = 0


def parse_arguments(items: Iterable[str]) -> dict[str, str]:
    """``NAME:=VALUE`` command-line overrides of launch arguments, as ``ros2 launch`` takes."""
    values = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise ValueError(f"launch arguments are NAME:=VALUE, got {item!r}")
        values[name] = value
    return values


class _Parser:
    def __init__(self, path: str, overrides: dict[str, str]):
        self.path = path
        self.overrides = dict(overrides)
        self.variables: dict[str, str] = {}
        self.dirname = os.path.dirname(os.path.abspath(path))

    def error(self, node: Any, problem: str) -> LaunchFileError:
        line = node.start_mark.line + 1 if node is not None else None
        return LaunchFileError(self.path, line, problem)

    # -- scalars -------------------------------------------------------------------------
    def substitute(self, node: Any, text: str) -> str:
        grown = [len(text)]

        def replace(match: re.Match[str]) -> str:
            value = expand(match)
            grown[0] += len(value) - len(match.group(0))
            if grown[0] > MAX_SUBSTITUTED_CHARS:
                raise self.error(node, f"substitutions make this value longer than "
                                 f"{MAX_SUBSTITUTED_CHARS} characters")
            return value

        def expand(match: re.Match[str]) -> str:
            words = match.group(1).split()
            if not words:
                raise self.error(node, f"empty substitution {match.group(0)!r}")
            kind, rest = words[0], words[1:]
            if kind == "env":
                if not rest or len(rest) > 2:
                    raise self.error(node, f"{match.group(0)!r}: use $(env VAR) or "
                                     "$(env VAR default)")
                value = os.environ.get(rest[0])
                if value is None:
                    if len(rest) == 1:
                        raise self.error(node, f"environment variable {rest[0]!r} is not set "
                                         f"(write $(env {rest[0]} DEFAULT) to give a default)")
                    value = rest[1]
                return value
            if kind == "var":
                if len(rest) != 1:
                    raise self.error(node, f"{match.group(0)!r}: use $(var NAME)")
                if rest[0] not in self.variables:
                    hint = did_you_mean(rest[0], self.variables)
                    raise self.error(node, f"unknown launch argument {rest[0]!r}{hint} "
                                     "(declare it earlier with an 'arg' action)")
                return self.variables[rest[0]]
            if kind == "dirname":
                if rest:
                    raise self.error(node, "$(dirname) takes no arguments")
                return self.dirname
            raise self.error(node, f"unknown substitution {match.group(0)!r} (known: "
                             "$(env VAR [default]), $(var NAME), $(dirname))")

        return _SUBSTITUTION.sub(replace, text)

    def scalar(self, node: Any, what: str, substitute: bool = True) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, f"{what} must be a single value, not a "
                             f"{'list' if isinstance(node, yaml.SequenceNode) else 'map'}")
        loader = yaml.SafeLoader("")
        try:
            value = loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.error(node, f"{what}: {exc}") from None
        finally:
            loader.dispose()
        if isinstance(value, str) and substitute:
            value = self.substitute(node, value)
        return value

    def split_command(self, node: Any, text: str) -> list[str]:
        """A cmd string split like a shell would, substitutions made per word afterwards: a
        ``$(var NAME)`` whose value has spaces stays one argument."""
        found = []

        def hide(match: re.Match[str]) -> str:
            found.append(match.group(0))
            return f"\x00{len(found) - 1}\x00"

        try:
            words = shlex.split(_SUBSTITUTION.sub(hide, text))
        except ValueError as exc:
            raise self.error(node, f"cmd: {exc}") from None
        return [self.substitute(node, _PLACEHOLDER.sub(lambda m: found[int(m.group(1))], w))
                for w in words]

    def string(self, node: Any, what: str, allow_empty: bool = False,
               substitute: bool = True) -> str:
        value = self.scalar(node, what, substitute)
        if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
            raise self.error(node, f"{what} must be a string, got {_describe(value)}")
        value = str(value)
        if not value and not allow_empty:
            raise self.error(node, f"{what} must not be empty")
        return value

    def boolean(self, node: Any, what: str) -> bool:
        value = self.scalar(node, what)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            value = value.lower() == "true"
        if not isinstance(value, bool):
            raise self.error(node, f"{what} must be true or false, got {_describe(value)}")
        return value

    def number(self, node: Any, what: str) -> float:
        value = self.scalar(node, what)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(node, f"{what} must be a number, got {_describe(value)}")
        value = float(value)
        if not math.isfinite(value):
            raise self.error(node, f"{what} must be a finite number, got {value}")
        return value

    def mapping(self, node: Any, what: str) -> dict[str, Any]:
        """``{key: (key_node, value_node)}`` of a YAML map, refusing duplicate keys."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a map of keys to values, got "
                             f"{_node_kind(node)}")
        result = {}
        for key_node, value_node in node.value:
            key = self.string(key_node, f"a key of {what}")
            if key in result:
                raise self.error(key_node, f"{key!r} appears twice in {what}")
            result[key] = (key_node, value_node)
        return result

    # -- the file ------------------------------------------------------------------------
    def parse(self, text: str) -> list[ProcessSpec]:
        try:
            root = compose_yaml(text, "the launch file")
        except YamlFileError as exc:
            raise LaunchFileError(self.path, None, str(exc).removeprefix("the launch file: ")
                                  ) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            problem = exc.problem or exc.context or "unreadable"
            if exc.context and exc.problem:
                started = f" started on line {exc.context_mark.line + 1}" \
                    if exc.context_mark is not None else ""
                problem += f" ({exc.context}{started})"
            raise LaunchFileError(self.path, line, f"invalid YAML: {problem}") from None
        except yaml.YAMLError as exc:
            raise LaunchFileError(self.path, None, f"invalid YAML: {exc}") from None
        if root is None:
            raise LaunchFileError(self.path, 1, "the file is empty; expected a top-level "
                                  "'launch:' list")
        top = self.mapping(root, "the top level")
        for key, (key_node, _) in top.items():
            if key != "launch":
                raise self.error(key_node, f"unknown top-level key {key!r}; a launch file "
                                 "has one top-level key, 'launch:', holding a list of actions")
        if "launch" not in top:
            raise self.error(root, "no 'launch:' list at the top level")
        actions = top["launch"][1]
        if not isinstance(actions, yaml.SequenceNode):
            raise self.error(actions, f"'launch:' must hold a list of actions (lines starting "
                             f"with '- '), got {_node_kind(actions)}")
        specs: list[ProcessSpec] = []
        names: dict[str, int] = {}
        for item in actions.value:
            action = self.mapping(item, "an action")
            if len(action) != 1:
                raise self.error(item, "each action is a map with exactly one key (process, "
                                 f"static_transform or arg), got {sorted(action)}")
            (kind, (kind_node, body)), = action.items()
            if kind in ("process", "executable"):
                spec = self.process(kind, kind_node, body)
            elif kind == "static_transform":
                spec = self.static_transform(kind_node, body)
            elif kind == "arg":
                self.arg(body)
                continue
            else:
                hint = ""
                if kind in ("node", "include", "group", "let", "set_env"):
                    hint = " (ROS packages, nodes and includes do not exist in tf2py)"
                raise self.error(kind_node, f"unknown action {kind!r}; known actions: "
                                 f"process, static_transform, arg{hint}")
            if spec.name in RESERVED_NAMES:
                raise self.error(kind_node, f"the name {spec.name!r} is reserved for launch's own "
                                 "messages")
            if spec.name in names:
                raise self.error(kind_node, f"two processes are named {spec.name!r} (the other is "
                                 f"on line {names[spec.name]}); give one a different 'name'")
            names[spec.name] = spec.line
            specs.append(spec)
        if not specs:
            raise self.error(actions, "nothing to launch: the 'launch:' list has no process or "
                             "static_transform")
        return specs

    def keys(self, body: Any, kind: str, allowed: Iterable[str]) -> dict[str, Any]:
        fields = self.mapping(body, kind)
        for key, (key_node, _) in fields.items():
            if key not in allowed:
                raise self.error(key_node, f"unknown key {key!r} in {kind}; known keys: "
                                 f"{', '.join(allowed)}")
        return fields

    def arg(self, body: Any) -> None:
        fields = self.keys(body, "arg", ("name", "default", "description"))
        if "name" not in fields:
            raise self.error(body, "arg needs a 'name'")
        name = self.string(fields["name"][1], "arg name")
        if name in self.overrides:
            self.variables[name] = self.overrides.pop(name)
        elif "default" in fields:
            self.variables[name] = self.string(fields["default"][1], f"default of arg {name!r}",
                                               allow_empty=True)
        else:
            raise self.error(body, f"arg {name!r} has no default; give one or pass "
                             f"{name}:=VALUE on the command line")

    def process(self, kind: str, at: Any, body: Any) -> ProcessSpec:
        """``at`` is the action's key node: whole-action problems are reported on its line."""
        fields = self.keys(body, kind, PROCESS_KEYS)
        if "cmd" not in fields:
            raise self.error(at, f"{kind} needs a 'cmd' (the command line to run)")
        cmd_node = fields["cmd"][1]
        if isinstance(cmd_node, yaml.SequenceNode):
            cmd = [self.string(n, "each word of cmd") for n in cmd_node.value]
        else:
            text = self.string(cmd_node, "cmd", substitute=False)
            cmd = self.split_command(cmd_node, text)
        if not cmd:
            raise self.error(cmd_node, "cmd must not be empty")
        cwd = None
        if "cwd" in fields:
            cwd = self.string(fields["cwd"][1], "cwd")
            if not os.path.isdir(cwd):
                raise self.error(fields["cwd"][1], f"cwd {cwd!r} is not a folder")
        argv = self.resolve_program(cmd, cmd_node, cwd)
        name = (self.string(fields["name"][1], "name") if "name" in fields
                else os.path.basename(cmd[0]) if cmd[0] not in ("tf2py", "python", "python3")
                else "-".join(w for w in cmd[:2] if not w.startswith("-")))
        env = self.environment(fields["env"][1]) if "env" in fields else {}
        respawn = self.boolean(fields["respawn"][1], "respawn") if "respawn" in fields else False
        required = (self.boolean(fields["required"][1], "required")
                    if "required" in fields else False)
        if respawn and required:
            raise self.error(at, "a process cannot be both respawn: true and required: true "
                             "(a required process ends the launch when it exits)")
        delay = 1.0
        if "respawn_delay" in fields:
            delay = self.number(fields["respawn_delay"][1], "respawn_delay")
            if delay < 0:
                raise self.error(fields["respawn_delay"][1], "respawn_delay must not be negative")
        return ProcessSpec(name=name, cmd=argv, env=env, cwd=cwd, respawn=respawn,
                           respawn_delay=delay, required=required, line=at.start_mark.line + 1)

    def environment(self, node: Any) -> dict[str, str]:
        env = {}
        if isinstance(node, yaml.SequenceNode):  # ROS style: [{name: A, value: b}]
            for item in node.value:
                entry = self.keys(item, "env entry", ("name", "value"))
                if "name" not in entry or "value" not in entry:
                    raise self.error(item, "each env entry needs 'name' and 'value'")
                env[self.string(entry["name"][1], "env name")] = self.string(
                    entry["value"][1], "env value", allow_empty=True)
            return env
        for key, (_, value_node) in self.mapping(node, "env").items():
            env[key] = self.string(value_node, f"env {key}", allow_empty=True)
        return env

    def resolve_program(self, cmd: list[str], node: Any, cwd: str | None) -> list[str]:
        program = cmd[0]
        if program == "tf2py":
            return [sys.executable, "-m", "tf2py.cli.main", *cmd[1:]]
        if program in ("python", "python3"):
            return [sys.executable, *cmd[1:]]
        if os.sep in program:
            path = program if os.path.isabs(program) else os.path.join(cwd or os.getcwd(), program)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise self.error(node, f"{program!r} is not an executable file")
            return list(cmd)
        if shutil.which(program) is None:
            raise self.error(node, f"program {program!r} not found on PATH")
        return list(cmd)

    def static_transform(self, at: Any, body: Any) -> ProcessSpec:
        fields = self.mapping(body, "static_transform")
        normalized = {}
        for key, (key_node, value_node) in fields.items():
            canonical = key.replace("_", "-")
            if canonical not in STATIC_KEYS:
                raise self.error(key_node, f"unknown key {key!r} in static_transform; known "
                                 f"keys: {', '.join(STATIC_KEYS)}")
            if canonical in normalized:
                raise self.error(key_node, f"{key!r} given twice (as - and _ spellings)")
            normalized[canonical] = value_node
        for key in ("frame-id", "child-frame-id"):
            if key not in normalized:
                raise self.error(at, f"static_transform needs '{key}'")
        frame_id = self.string(normalized["frame-id"], "frame-id")
        child_frame_id = self.string(normalized["child-frame-id"], "child-frame-id")
        if frame_id.lstrip("/") == child_frame_id.lstrip("/"):
            raise self.error(at, f"cannot publish static transform from '{frame_id}' to "
                             f"'{child_frame_id}'")
        has_quaternion = any(k in normalized for k in ("qx", "qy", "qz", "qw"))
        has_euler = any(k in normalized for k in ("roll", "pitch", "yaw"))
        if has_quaternion and has_euler:
            raise self.error(at, "Cannot specify both quaternion and Euler rotations")
        argv = [sys.executable, "-m", "tf2py.cli.main", "static-transform-publisher",
                f"--frame-id={frame_id}", f"--child-frame-id={child_frame_id}"]
        for key in STATIC_NUMBER_KEYS:
            if key in normalized:
                # --x=VALUE: a value such as -1e-05 must not read as a flag
                argv.append(f"--{key}={self.number(normalized[key], key)!r}")
        if has_quaternion:
            q = [self.number(normalized[k], k) if k in normalized else (1.0 if k == "qw" else 0.0)
                 for k in ("qx", "qy", "qz", "qw")]
            if not any(q):
                raise self.error(at, "the quaternion (0, 0, 0, 0) is not a rotation")
        if "core" in normalized:
            argv.append(f"--core={self.string(normalized['core'], 'core')}")
        name = (self.string(normalized["name"], "name") if "name" in normalized
                else f"static_transform_{child_frame_id}")
        return ProcessSpec(name=name, cmd=argv, line=at.start_mark.line + 1)


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, (int, float)):
        return f"{value!r} (a number)"
    return cut(repr(value))


def _node_kind(node: Any) -> str:
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a map"
    if isinstance(node, yaml.ScalarNode) and node.value == "" and node.tag.endswith("null"):
        return "nothing"
    # A whole file may be one value (not a launch file at all): quote its start only.
    head, cut_off, length = cut(node.value, 40).partition("... (")
    return f"the single value '{head}...' ({length}" if cut_off else f"the single value '{head}'"


def load(path: str, overrides: dict[str, str] | None = None) -> list[ProcessSpec]:
    """The processes a launch file lists, fully checked; raises LaunchFileError."""
    try:
        text = read_text_file(path, "launch file", MAX_LAUNCH_FILE_BYTES)
    except YamlFileError as exc:
        problem = {"too_large": f"too large for a launch file (over "
                                f"{MAX_LAUNCH_FILE_BYTES // 1024} KiB)",
                   "not_utf8": f"not a UTF-8 text file ({exc.detail})"}.get(
            exc.kind, f"cannot read the launch file: {exc.detail}")
        raise LaunchFileError(path, None, problem) from None
    parser = _Parser(path, overrides or {})
    specs = parser.parse(text)
    if parser.overrides:
        unknown = ", ".join(name + did_you_mean(name, parser.variables)
                            for name in sorted(parser.overrides))
        raise LaunchFileError(path, None, f"unknown launch argument(s) on the command line: "
                              f"{unknown} (the file declares: "
                              f"{', '.join(sorted(parser.variables)) or 'none'})")
    return specs

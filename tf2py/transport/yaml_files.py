"""Files the commands read (``--world``, launch files, any YAML), read within bounds.

A file is read only if it is a regular file (a FIFO would block, ``/dev/zero`` never end),
opened without blocking and checked again once open, and no larger than the caller's limit.
YAML is checked event by event before anything is built from it: nesting at most
``MAX_DEPTH`` levels (PyYAML builds nodes recursively: deeper would be a RecursionError), at
most ``MAX_ALIASES`` aliases, and at most ``MAX_NODES`` nodes once aliases are expanded (the
"billion laughs": a few lines of aliases of aliases that stand for billions of values).
Every refusal is a ``YamlFileError`` of one line naming the file.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import yaml

__all__ = ["YamlFileError", "read_text_file", "check_yaml", "load_yaml", "compose_yaml",
           "MAX_DEPTH", "MAX_ALIASES", "MAX_NODES"]

#: Nesting of lists and maps a YAML file may have.
MAX_DEPTH = 64
#: Aliases (``*name``) a YAML file may use.
MAX_ALIASES = 10_000
#: Nodes (values, lists, maps) a YAML file may stand for with its aliases expanded.
MAX_NODES = 2_000_000

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when there is one


class YamlFileError(ValueError):
    """A file that cannot be used: one line saying which and why. ``kind`` for callers that
    word it their own way: ``"unreadable"``, ``"not_regular"``, ``"too_large"``,
    ``"not_utf8"``, ``"yaml"``; ``detail`` the reason without the file's name."""

    def __init__(self, message: str, kind: str = "yaml", detail: str = ""):
        super().__init__(message)
        self.kind = kind
        self.detail = detail or message


def read_text_file(path: str, what: str, max_bytes: int) -> str:
    """The UTF-8 text of the regular file at ``path`` (``what`` names it in errors, e.g.
    ``"world file"``); YamlFileError if it is not a regular file, over ``max_bytes``, or
    not UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        detail = str(exc.strerror or exc)
        raise YamlFileError(f"cannot read {what} {path!r}: {detail}", "unreadable",
                            detail) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a pipe or a device?)"
            raise YamlFileError(f"cannot read {what} {path!r}: {kind}", "not_regular", kind)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        detail = str(exc.strerror or exc)
        raise YamlFileError(f"cannot read {what} {path!r}: {detail}", "unreadable",
                            detail) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise YamlFileError(f"{what} {path!r} is too large (over {_size(max_bytes)})",
                            "too_large", f"over {_size(max_bytes)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"{what} {path!r} is not UTF-8 text", "not_utf8",
                            str(exc.reason)) from None


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


def check_yaml(text: str, where: str) -> None:
    """Refuse YAML nested deeper than MAX_DEPTH, with more than MAX_ALIASES aliases, or
    standing for more than MAX_NODES nodes with its aliases expanded (YamlFileError, naming
    the line); YAML syntax errors are left to the loader."""
    try:
        _check_events(yaml.parse(text, Loader=_LOADER), where)
    except yaml.YAMLError:
        # libyaml stops at its own bounds too (a nesting of 1 000): look again with PyYAML's
        # parser (no recursion either) so a bound of ours is named rather than the error.
        try:
            _check_events(yaml.parse(text, Loader=yaml.SafeLoader), where)
        except yaml.YAMLError:
            return  # a syntax error: the loader words it with its line


def _check_events(events: Any, where: str) -> None:
    depth = 0
    aliases = 0
    total = 0
    sizes: dict[str, int] = {}  # anchor -> nodes it stands for
    open_sizes: list[int] = []  # nodes in each open list or map, itself included
    open_anchors: list[str | None] = []
    for event in events:
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlFileError(f"{where}: nested deeper than {MAX_DEPTH} levels at "
                                    f"line {line}")
            open_sizes.append(1)
            open_anchors.append(event.anchor)
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            n = open_sizes.pop()
            anchor = open_anchors.pop()
            if anchor is not None:
                sizes[anchor] = n
            if open_sizes:
                open_sizes[-1] += n
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise YamlFileError(f"{where}: more than {MAX_ALIASES} aliases "
                                        f"(line {line})")
                n = sizes.get(event.anchor or "", 1)
            else:
                n = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            total += n
            if open_sizes:
                open_sizes[-1] += n
        if total > MAX_NODES:
            raise YamlFileError(f"{where}: stands for more than {MAX_NODES} values once "
                                f"its aliases are expanded (line {line})")


def load_yaml(text: str, where: str) -> Any:
    """The document of ``text`` (plain data: safe loading), within the bounds of
    ``check_yaml``; YamlFileError naming the line for invalid YAML."""
    check_yaml(text, where)
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{where}: {yaml_problem(exc)}") from None


def compose_yaml(text: str, where: str) -> Any:
    """The node tree of ``text`` (``yaml.compose``, marks kept for error lines), within the
    bounds of ``check_yaml``. YAML errors are raised as PyYAML's own (the caller words
    them)."""
    check_yaml(text, where)
    return yaml.compose(text, Loader=yaml.SafeLoader)


def yaml_problem(exc: BaseException) -> str:
    """One line for a PyYAML error: its problem and line."""
    mark = getattr(exc, "problem_mark", None)
    line = f" at line {mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"{' '.join(str(problem).split())}{line}"

"""Outside the bus packages no code decides anything by an address's scheme: what differs
between buses is a ``Transport`` hook or an entry of the one scheme registry
(``tf2py/transport/interface.py``'s ``register_scheme`` lines), so a new bus changes nothing
outside its own package and its registration line (docs/architecture.md, "How to add a bus").

The scan reads every module of ``tf2py/`` with ``ast`` and reports each string constant that is
a scheme or a scheme's prefix (``"ros2"``, ``"zenoh://"``, ``"tcp:"``...), which is what a
branch on a scheme compares with, slices by or keys a table on. Longer texts (help, messages,
default addresses such as ``tcp://127.0.0.1:7400``) are words, not branches, and are not
reported."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TF2PY = Path(__file__).resolve().parents[3] / "tf2py"

#: The bus packages, where scheme-specific code belongs.
BUS_PACKAGES = ("transport/zmq/", "transport/ros2/", "transport/zenoh/")
#: Modules whose bare scheme-like words are not address schemes, with the reason.
NOT_SCHEMES = {
    "bag/reader.py": "bag kinds (a ROS 2 bag folder is kind 'ros2')",
    "bag/writer.py": "MCAP profile and encoding names of ROS 2",
}
#: Calls whose arguments are the registry itself.
REGISTRATION_CALLS = {"register_scheme"}

_SCHEME_WORD = re.compile(r"^(tcp|ipc|inproc|ros2|zenoh|udp|tls|quic)(:|://)?$", re.IGNORECASE)
#: A predicate on one scheme (``is_ros2(core)``, ``is_zenoh_address(a)``) is a branch too.
_SCHEME_TEST = re.compile(r"^is_(tcp|ipc|inproc|ros2|zenoh|zmq)", re.IGNORECASE)


def _identifier(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.alias):
        return node.asname or node.name
    return ""


def scheme_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every scheme-like string constant in ``source`` that is not an
    argument of a registration call, and of every use of a one-scheme predicate."""
    tree = ast.parse(source)
    registered: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in REGISTRATION_CALLS:
                registered.update(id(inner) for inner in ast.walk(node))
    found = [(node.lineno, node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and id(node) not in registered and _SCHEME_WORD.match(node.value.strip())]
    found += [(getattr(node, "lineno", 0), _identifier(node)) for node in ast.walk(tree)
              if _SCHEME_TEST.match(_identifier(node))]
    return sorted(found)


def scheme_branches(root: Path = TF2PY) -> list[str]:
    """``path:line: 'constant'`` of every scheme literal outside the bus packages."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(BUS_PACKAGES) or relative in NOT_SCHEMES:
            continue
        for line, value in scheme_literals(path.read_text(encoding="utf-8")):
            found.append(f"tf2py/{relative}:{line}: {value!r}")
    return found


def test_no_code_outside_the_bus_packages_branches_on_a_scheme():
    found = scheme_branches()
    assert not found, ("scheme branches outside the bus packages (use a Transport hook or "
                       "the registry in transport/interface.py):\n" + "\n".join(found))


@pytest.mark.parametrize("code", [
    'if address.startswith("zenoh://"):\n    pass\n',
    'kind = "zmq" if name == "tcp" else name\n',
    'LINKS = {"ipc": "tf2py.server.zmq_link"}\n',
    'host = endpoint[len("tcp://"):]\n',
    'if scheme in ("ros2", "zenoh:"):\n    pass\n',
    'from tf2py.transport.interface import is_ros2\nwhere = "graph" if is_ros2(c) else "core"\n',
])
def test_the_scan_finds_a_branch(tmp_path, code):
    """The scan can fail: each way of branching on a scheme is reported, in any module."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "bad.py").write_text(code)
    assert {line.split(":")[0] for line in scheme_branches(tmp_path)} == {"tf2py/cli/bad.py"}


def test_the_scan_leaves_words_registrations_and_bus_packages_alone(tmp_path):
    (tmp_path / "transport" / "zenoh").mkdir(parents=True)
    (tmp_path / "transport" / "zenoh" / "x.py").write_text('ok = a.startswith("zenoh://")\n')
    (tmp_path / "interface.py").write_text(
        'register_scheme("zenoh", "tf2py.transport.zenoh", extra="zenoh")\n'
        'HELP = "the bus, e.g. zenoh://tcp/127.0.0.1:7447"\n'
        'DEFAULT = "tcp://127.0.0.1:7400"\n')
    assert scheme_branches(tmp_path) == []

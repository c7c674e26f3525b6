"""The ``tf2py`` package itself: every public name resolves, ``import tf2py`` stays light
(no ZeroMQ), and type checkers see the real classes behind the lazily imported names."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest

import tf2py
from helpers import REPO


def _type_checking_imports() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` in tf2py/__init__.py."""
    tree = ast.parse((REPO / "tf2py/__init__.py").read_text())
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                for alias in imp.names:
                    module = "tf2py" + ("." + imp.module if imp.module else "")
                    names[alias.asname or alias.name] = (
                        f"{module}.{alias.name}" if imp.module is None else module)
    return names


def test_every_lazy_name_is_imported_for_type_checkers_from_the_same_module():
    lazy = tf2py._LAZY
    assert _type_checking_imports() == lazy


def test_all_ends_with_the_lazy_names():
    assert tf2py.__all__[-len(tf2py._LAZY):] == list(tf2py._LAZY)


@pytest.mark.parametrize("name", tf2py.__all__)
def test_every_public_name_resolves(name):
    assert getattr(tf2py, name) is not None


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Bufer'"):
        tf2py.Bufer  # noqa: B018


def test_import_tf2py_loads_no_transport():
    code = ("import sys, tf2py; b = tf2py.BufferCore; "
            "print(sorted(m for m in ('zmq', 'msgpack', 'tf2py.transport') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.timeout(400)  # a cold mypy run over the package takes over a minute here
def test_mypy_sees_the_real_classes_behind_from_tf2py_import(tmp_path):
    """``from tf2py import Buffer`` was ``Any`` to mypy (the module ``__getattr__``): then a
    wrong use passed. Now mypy reports it, and an unknown name too."""
    mypy = pytest.importorskip("mypy.api")
    snippet = tmp_path / "use.py"
    snippet.write_text(textwrap.dedent("""
        from tf2py import Buffer, BufferClient, TransformListener
        from tf2py import NoSuchName

        buffer: int = Buffer()
        reveal_type(BufferClient)
        reveal_type(TransformListener)
    """))
    stdout, stderr, _ = mypy.run([str(snippet), "--cache-dir", str(tmp_path / "cache"),
                                  "--follow-imports=silent", "--no-error-summary"])
    assert 'Incompatible types in assignment (expression has type "Buffer"' in stdout, stdout
    assert 'Module "tf2py" has no attribute "NoSuchName"' in stdout, stdout
    assert "tf2py.server.client.BufferClient" in stdout, stdout
    assert "tf2py.transport.listener.TransformListener" in stdout, stdout


def test_dir_lists_the_public_names_and_no_import_helpers():
    names = dir(tf2py)
    assert set(tf2py.__all__) <= set(names)
    assert "TYPE_CHECKING" not in names and "importlib" not in names

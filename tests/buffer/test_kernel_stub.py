"""The kernel's type stub (tf2py/buffer/_kernel_ext.pyi) against the compiled module: every
name in both, and the same parameters where the module tells them."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from tf2py.buffer import _kernel_ext

STUB = Path(_kernel_ext.__file__).with_name("_kernel_ext.pyi")
if not STUB.exists():  # an editable install loads the module from elsewhere
    STUB = Path(__file__).resolve().parents[2] / "tf2py" / "buffer" / "_kernel_ext.pyi"


def stub_names() -> dict[str, object]:
    """name -> parameter names (functions) or member dict (classes) or None (values)."""
    tree = ast.parse(STUB.read_text())
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = [a.arg for a in node.args.args]
        elif isinstance(node, ast.ClassDef):
            members: dict[str, object] = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members[item.name] = [a.arg for a in item.args.args][1:]
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members[item.target.id] = None
            out[node.name] = members
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
    return out


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "[(" and 1 or c in "])" and -1 or 0
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def module_parameters(function: object) -> list[str] | None:
    """Parameter names from nanobind's signature line in the docstring, else None."""
    doc = getattr(function, "__doc__", None) or ""
    first = doc.splitlines()[0] if doc else ""
    match = re.match(r"\w+\((.*)\)\s*->", first)
    if not match:
        return None
    names = []
    for part in _top_level_parts(match.group(1)):
        name = part.split(":")[0].split("=")[0].strip().lstrip("*")
        if name and name != "/":
            names.append(name)
    return names


def test_every_public_name_of_the_module_is_in_the_stub_and_back():
    stub = stub_names()
    module = {n for n in dir(_kernel_ext) if not n.startswith("__")}
    assert module - set(stub) == set(), "in the module, missing from the stub"
    assert {n for n in stub if n != "ErrorRecord"} - module == set(), "in the stub only"


def test_every_method_of_the_kernel_classes_is_in_the_stub_with_its_parameters():
    stub = stub_names()
    for cls_name in ("Kernel", "TimeCache"):
        cls = getattr(_kernel_ext, cls_name)
        members = stub[cls_name]
        assert isinstance(members, dict)
        for name, value in vars(cls).items():
            if name.startswith("__") and name not in ("__init__", "__len__"):
                continue
            assert name in members, f"{cls_name}.{name} missing from the stub"
            params = module_parameters(value) if callable(value) else None
            if params is not None and members[name] is not None and name != "__init__":
                assert members[name] == params[1:] or members[name] == params, (cls_name, name, params)
        for name in members:
            assert hasattr(cls, name), f"{cls_name}.{name} is in the stub only"


def test_module_functions_have_the_stubs_parameters():
    stub = stub_names()
    for name, params in stub.items():
        value = getattr(_kernel_ext, name, None)
        if isinstance(params, list) and callable(value) and not inspect.isclass(value):
            found = module_parameters(value)
            if found is not None:
                assert found == params, (name, found, params)

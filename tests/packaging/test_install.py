"""Installing tf2py: two ``pip install -e .`` of one checkout at once into two virtualenvs
(each build in its own temporary folder, nothing shared in the checkout), and the wheels
of tools/build_wheels.py installed where there is no compiler. Each compiles the kernel,
minutes on a loaded machine: marked ``heavy``, run with TF2PY_HEAVY_TESTS=1
(``TF2PY_HEAVY_TESTS=1 python -m pytest tests/packaging``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import REPO

pytestmark = pytest.mark.heavy

LOOKUP = textwrap.dedent("""
    import tf2py
    b = tf2py.Buffer()
    b.set_transform(tf2py.make_transform("map", "base", (1.0, 2.0, 3.0), stamp=5.0), "t")
    t = b.lookup_transform("map", "base", 0)
    assert (t.transform.translation.x, t.header.stamp.nanoseconds) == (1.0, 5_000_000_000)
    print("lookup ok", tf2py.__file__)
""")


@pytest.mark.timeout(1800)
def test_two_editable_installs_of_one_checkout_at_once_both_work(tmp_path):
    venvs = [tmp_path / f"venv{k}" for k in (1, 2)]
    for venv in venvs:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    logs = [open(tmp_path / f"install{k}.log", "w") for k in (1, 2)]
    started = time.monotonic()
    # An empty kernel cache of this test's own: both compile, and both write it at once.
    env = {**os.environ, "TF2PY_BUILD_CACHE": str(tmp_path / "cache")}
    installs = [
        subprocess.Popen([str(venv / "bin/python"), "-m", "pip", "install",
                          "--disable-pip-version-check", "-e", str(REPO)],
                         stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
        for venv, log in zip(venvs, logs)
    ]
    try:
        codes = [p.wait(timeout=1500) for p in installs]
    finally:
        for p in installs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    took = time.monotonic() - started
    outputs = [(tmp_path / f"install{k}.log").read_text() for k in (1, 2)]
    assert codes == [0, 0], "\n\n".join(outputs)[-6000:]
    (entry,) = (tmp_path / "cache").iterdir()  # one kernel, whole, whoever wrote it last
    assert [p.name.startswith("_kernel_ext") for p in entry.iterdir()] == [True]
    for venv in venvs:
        result = subprocess.run([str(venv / "bin/python"), "-c", LOOKUP], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert str(REPO / "tf2py") in result.stdout  # editable: the checkout's files
    print(f"two concurrent editable installs: {took:.0f} s")


@pytest.mark.timeout(1800)
def test_a_manylinux_wheel_installs_and_looks_up_without_a_compiler(tmp_path):
    """tools/build_wheels.py for this Python: build, auditwheel repair, then install into a
    fresh venv whose PATH has no compiler, and a lookup there."""
    result = subprocess.run(
        [sys.executable, str(REPO / "tools/build_wheels.py"), "--python", sys.executable,
         "--out", str(tmp_path / "wheels"), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=1500)
    logs = "\n".join(p.read_text()[-3000:] for p in (tmp_path / "logs").glob("*.log"))
    assert result.returncode == 0, result.stdout + result.stderr + logs
    wheels = list((tmp_path / "wheels").glob("tf2py-*.whl"))
    assert len(wheels) == 1 and "manylinux" in wheels[0].name, wheels
    assert "| pass |" in result.stdout
    assert "smoke ok" in logs  # the lookup ran in the compiler-less venv


@pytest.mark.timeout(6000)
def test_every_python_on_the_machine_builds_and_passes_the_smoke_run(tmp_path):
    """The whole matrix (python3.10 ... python3.13 found here): what docs/wheels.md records."""
    result = subprocess.run(
        [sys.executable, str(REPO / "tools/build_wheels.py"),
         "--out", str(tmp_path / "wheels"), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=6000)
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr

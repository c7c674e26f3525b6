"""The kernel's build cache: a second install (an extra, another virtualenv) takes the kernel
compiled by the first instead of compiling it again, while its sources are unchanged; the
cache is written atomically, and a cache that cannot be written never fails a build.

The script tests run CMake on the cache script alone (seconds); the install test compiles
the kernel once, minutes on a loaded machine: marked ``heavy`` (TF2PY_HEAVY_TESTS=1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from helpers import REPO

SCRIPT = REPO / "tools" / "kernel_cache.cmake"


def _cmake() -> str:
    found = shutil.which("cmake")
    if found is None:
        pytest.skip("cmake is not on PATH (pip install cmake)")
    return found


def _run_script(source, folder):
    return subprocess.run([_cmake(), f"-DSOURCE={source}", f"-DFOLDER={folder}", "-P",
                           str(SCRIPT)], capture_output=True, text=True, timeout=60)


def test_the_built_kernel_is_put_in_the_cache_under_its_own_name_only(tmp_path):
    built = tmp_path / "_kernel_ext.cpython-311-x86_64-linux-gnu.so"
    built.write_bytes(b"\x7fELF kernel")
    folder = tmp_path / "cache" / "0123abcd"
    result = _run_script(built, folder)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in folder.iterdir()] == [built.name]  # no partial file left
    assert (folder / built.name).read_bytes() == b"\x7fELF kernel"


def test_a_cache_that_cannot_be_written_does_not_fail_the_build(tmp_path):
    built = tmp_path / "_kernel_ext.so"
    built.write_bytes(b"kernel")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    result = _run_script(built, blocker / "0123abcd")
    assert result.returncode == 0, result.stderr
    assert blocker.read_text().startswith("a file")


LOOKUP = ("import tf2py; b = tf2py.Buffer(); "
          "b.set_transform(tf2py.make_transform('map', 'base', (1.0, 2.0, 3.0), stamp=5.0), 't'); "
          "print(b.lookup_transform('map', 'base', 0).transform.translation.x)")


@pytest.mark.heavy
@pytest.mark.timeout(1800)
def test_a_second_install_takes_the_cached_kernel(tmp_path):
    cache = tmp_path / "cache"  # this test's own: it must compile once, then hit
    env = {**os.environ, "TF2PY_BUILD_CACHE": str(cache)}
    took = []
    logs = []
    for k, target in ((1, str(REPO)), (2, f"{REPO}[bag]")):
        venv = tmp_path / f"venv{k}"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        started = time.monotonic()
        done = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-v",
                               "--disable-pip-version-check", "-e", target],
                              capture_output=True, text=True, env=env, timeout=1500,
                              cwd=tmp_path)
        took.append(time.monotonic() - started)
        logs.append(done.stdout + done.stderr)
        assert done.returncode == 0, logs[-1][-6000:]
        check = subprocess.run([str(venv / "bin/python"), "-c", LOOKUP], capture_output=True,
                               text=True, timeout=120, cwd=tmp_path)
        assert check.stdout.strip() == "1.0", check.stderr
    (entry,) = cache.iterdir()
    assert [p.name.startswith("_kernel_ext") for p in entry.iterdir()] == [True]
    assert "Building CXX object" in logs[0]
    assert "Building CXX object" not in logs[1]
    assert "kernel unchanged, not compiled again" in logs[1]
    print(f"first install {took[0]:.0f} s (compiles), second with an extra {took[1]:.0f} s")


def test_the_cache_keeps_the_eight_most_recent_kernels(tmp_path):
    built = tmp_path / "_kernel_ext.so"
    built.write_bytes(b"kernel")
    root = tmp_path / "cache"
    for k in range(10):
        old = root / f"old{k:02d}"
        old.mkdir(parents=True)
        (old / "_kernel_ext.so").write_bytes(b"old")
        stamp = time.time() - 1000 + k  # old00 the oldest
        os.utime(old, (stamp, stamp))
    result = _run_script(built, root / "new")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in root.iterdir()) == ["new", *[f"old{k:02d}" for k in range(3, 10)]]

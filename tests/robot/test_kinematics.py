"""The batch walk's own parts: the twist that turns an axis into z, the array it reuses
between calls, and agreement between the one-configuration and N-configuration paths."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tf2py import RobotModel
from tf2py.robot.forward import twist_for

CHAIN = """<robot name="chain"><link name="l0"/>{links}{joints}</robot>"""


def chain(axes: list[str]) -> RobotModel:
    """A chain of revolute joints about ``axes``, each with an offset and a tilt."""
    links = "".join(f'<link name="l{i + 1}"/>' for i in range(len(axes)))
    joints = "".join(
        f'<joint name="j{i}" type="continuous"><parent link="l{i}"/><child link="l{i + 1}"/>'
        f'<origin xyz="0.1 {0.02 * i} 0.3" rpy="{0.1 * i} -0.2 0.3"/><axis xyz="{axis}"/></joint>'
        for i, axis in enumerate(axes))
    return RobotModel.from_urdf_string(CHAIN.format(links=links, joints=joints))


@pytest.mark.parametrize("axis", [(0, 0, 1), (0, 0, -1), (1, 0, 0), (-1, 0, 0), (0, 1, 0),
                                  (0, -1, 0), (0.3, -0.4, 0.866), (1, 1, 0), (0, 0.6, -0.8)])
def test_the_twist_is_a_rotation_taking_z_to_the_axis(axis):
    a = np.array(axis, float) / np.linalg.norm(axis)
    q = twist_for(a)
    assert np.allclose(q.T @ q, np.eye(3), atol=1e-15)
    assert np.isclose(np.linalg.det(q), 1.0)
    assert np.allclose(q[:, 2], a, atol=1e-15)


def test_axis_aligned_twists_are_exact_permutations():
    for axis in np.vstack([np.eye(3), -np.eye(3)]):
        q = twist_for(axis)
        assert set(np.unique(q).tolist()) <= {-1.0, 0.0, 1.0}


def test_one_and_n_configurations_agree_for_every_kind_of_axis():
    model = chain(["0 0 1", "0 0 -1", "1 0 0", "0 -1 0", "0.3 -0.4 0.866", "1 1 1"])
    rng = np.random.default_rng(5)
    q = rng.uniform(-np.pi, np.pi, (7, len(model.joint_names)))
    batch = model.forward_kinematics(q)
    for i in range(len(q)):
        assert np.allclose(batch[i], model.forward_kinematics(q[i]), atol=1e-14)
        # and the transforms composed along the chain
        pose = np.eye(4)
        for t in model.transforms(q[i]):
            pose = pose @ t.transform.as_matrix()
        assert np.allclose(pose, batch[i, -1], atol=1e-14)


def test_a_result_is_not_changed_by_the_next_call():
    model = chain(["0 0 1", "1 0 0"])
    first_q = np.zeros((50, 2))
    first = model.forward_kinematics(first_q)
    kept = first.copy()
    model.forward_kinematics(np.ones((50, 2)))
    model.forward_kinematics(np.ones((20, 2)))
    assert np.array_equal(first, kept)
    assert first.flags.c_contiguous and first.shape == (50, 3, 4, 4)


def test_concurrent_calls_each_get_their_own_answer():
    model = chain(["0 0 1", "0 1 0", "1 0 0"])
    rng = np.random.default_rng(9)
    inputs = [rng.uniform(-1, 1, (2000, 3)) for _ in range(4)]
    expected = [model.forward_kinematics(q) for q in inputs]
    failures: list[int] = []

    def work(k: int) -> None:
        for _ in range(5):
            if not np.array_equal(model.forward_kinematics(inputs[k]), expected[k]):
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures and not any(t.is_alive() for t in threads)


def test_an_empty_batch_and_a_model_of_one_link():
    model = chain(["0 0 1"])
    assert model.forward_kinematics(np.zeros((0, 1))).shape == (0, 2, 4, 4)
    single = RobotModel.from_urdf_string('<robot name="r"><link name="only"/></robot>')
    assert single.joint_names == [] and single.links == ["only"]
    assert np.array_equal(single.forward_kinematics([]), np.eye(4)[None])
    assert single.forward_kinematics(np.zeros((3, 0))).shape == (3, 1, 4, 4)
    assert single.transforms([]) == [] and single.static_transforms() == []


def test_turning_by_special_angles_matches_the_rotation_built_by_hand():
    model = chain(["0 0 1"])
    angles = np.array([0.0, np.pi, -np.pi, np.pi / 2, -np.pi / 2, 2 * np.pi, 3 * np.pi, 123.456,
                       -1e4, 1e-300])
    batch = model.forward_kinematics(angles[:, None])
    origin = model.joints[0].origin.as_matrix()
    for theta, pose in zip(angles, batch):
        turn = np.eye(4)
        turn[:2, :2] = [[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]
        assert np.abs(pose[1] - origin @ turn).max() < 1e-15, theta

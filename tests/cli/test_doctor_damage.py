"""`tf2py doctor --from-bag` on a damaged bag: the damage is a finding, the exit is non-zero
(issue 30: it used to note the damage, then say "no problems found" and exit 0)."""

from __future__ import annotations

import json

import pytest

from bag.bagdata import write_bag

pytestmark = pytest.mark.timeout(600)

S = 1_000_000_000
T0 = 1_700_000_000 * S
IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def clean_robot():
    messages = [(True, T0, [("base_link", "laser", T0, IDENTITY)])]
    for i in range(200):
        log_ns = T0 + i * S // 20
        messages.append((False, log_ns, [("odom", "base_link", log_ns,
                                          (0.01 * i, 0, 0, 0, 0, 0, 1.0))]))
    return messages


def test_a_truncated_bag_is_a_finding_and_a_failure(tf2py, tmp_path):
    bag = write_bag(tmp_path / "cut.mcap", clean_robot())
    data = bag.read_bytes()
    bag.write_bytes(data[:len(data) * 2 // 3])  # a recorder killed mid-write
    result = tf2py("doctor", "--from-bag", str(bag), timeout=240)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    damaged = [line for line in lines if line.startswith("[damaged_bag]")]
    assert len(damaged) == 1 and " Fix: " in damaged[0], result.stdout
    assert "no problems found" not in result.stdout
    report = json.loads(tf2py("doctor", "--from-bag", str(bag), "--json", timeout=240).stdout)
    assert [f["check"] for f in report["findings"]] == ["damaged_bag"]


def test_a_whole_bag_has_no_damage_finding(tf2py, tmp_path):
    bag = write_bag(tmp_path / "whole.mcap", clean_robot())
    result = tf2py("doctor", "--from-bag", str(bag), timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr

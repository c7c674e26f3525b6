"""`tf2py keygen DIR [--add NAME]` and `--keys DIR` on the commands (real subprocesses)."""

from __future__ import annotations

import subprocess
import sys

from helpers import wait_for

TF2PY = [sys.executable, "-m", "tf2py.cli.main"]


def run(*args, timeout=60, env=None):
    return subprocess.run(TF2PY + list(args), capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_keygen_makes_a_site_and_refuses_to_overwrite_it(tmp_path):
    site = tmp_path / "site"
    result = run("keygen", str(site))
    assert result.returncode == 0, result.stderr
    assert "made site keys" in result.stdout
    assert (site / "server.key_secret").exists() and (site / "authorized" / "site.key").exists()
    again = run("keygen", str(site))
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        f"tf2py keygen: error: {site} already holds keys; use --add NAME to add an identity"]


def test_keygen_add_makes_an_authorised_identity(tmp_path):
    site = tmp_path / "site"
    assert run("keygen", str(site)).returncode == 0
    result = run("keygen", str(site), "--add", "robot")
    assert result.returncode == 0, result.stderr
    assert (site / "robot" / "client.key_secret").exists()
    assert (site / "authorized" / "robot.key").exists()
    bad = run("keygen", str(tmp_path / "nowhere"), "--add", "robot")
    assert bad.returncode == 1 and "is not a site folder" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_keys_option_on_commands(tmp_path, spawn):
    site = tmp_path / "site"
    assert run("keygen", str(site)).returncode == 0
    assert run("keygen", str(site), "--add", "arm").returncode == 0
    core = spawn(TF2PY + ["core", "--address", "tcp://127.0.0.1:0", "--keys", str(site)])
    address = core.wait_for_line("tf2py core: ready at ").split("ready at ", 1)[1].strip()
    publisher = spawn(TF2PY + ["static-transform-publisher", "--frame-id", "world",
                               "--child-frame-id", "arm_base", "--x", "1", "--core", address,
                               "--keys", str(site / "arm")])
    publisher.wait_for_line("arm_base")

    def listed():
        result = run("frames", "--wait-time", "1.0", "--core", address, "--keys", str(site))
        return result.returncode == 0 and "arm_base" in result.stdout

    wait_for(listed, timeout=30, interval=0.2)
    # without keys, the keyed bus gives nothing
    plain = run("frames", "--wait-time", "1.0", "--core", address)
    assert plain.returncode == 1 and "arm_base" not in plain.stdout


def test_keys_option_naming_a_missing_folder_is_a_one_line_error(tmp_path):
    result = run("frames", "--wait-time", "0.1", "--keys", str(tmp_path / "none"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist" in lines[0] and "tf2py keygen" in lines[0]


def test_keys_option_with_a_ros2_core_is_a_one_line_error(tmp_path):
    assert run("keygen", str(tmp_path / "site")).returncode == 0
    result = run("frames", "--core", "ros2://7", "--wait-time", "0.1",
                 "--keys", str(tmp_path / "site"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not to ROS 2 (ros2://)" in lines[0]


def test_connect_only_identity_cannot_run_a_core(tmp_path):
    site = tmp_path / "site"
    assert run("keygen", str(site)).returncode == 0
    assert run("keygen", str(site), "--add", "guest").returncode == 0
    result = run("core", "--address", "tcp://127.0.0.1:0", "--keys", str(site / "guest"))
    assert result.returncode == 1
    assert "may connect to a site but not serve one" in result.stderr
    assert "Traceback" not in result.stderr

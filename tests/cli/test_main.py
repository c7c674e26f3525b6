"""The tf2py dispatcher: help, unknown commands and unknown flags."""

import subprocess
import sys

TF2PY = [sys.executable, "-m", "tf2py.cli.main"]


def run(*args):
    return subprocess.run([*TF2PY, *args], capture_output=True, text=True, timeout=60)


def test_no_command_prints_help_and_one_error_line_and_exits_2():
    result = run()
    assert result.returncode == 2
    assert "<command>" in result.stdout
    assert result.stderr == "tf2py: error: no command given (tf2py --help lists them)\n"


def test_an_unknown_top_level_flag_is_one_line():
    result = run("--bogus")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "tf2py: error: unrecognized arguments: --bogus (see tf2py --help)\n"


def test_help_lists_every_command():
    result = run("--help")
    assert result.returncode == 0
    for name in ["core", "server", "echo", "static-transform-publisher", "frames",
                 "view-frames", "monitor", "launch", "play", "record"]:
        assert name in result.stdout


def test_unknown_command_is_one_line_error():
    result = run("nope")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "invalid choice: 'nope'" in result.stderr


def test_unknown_flag_names_the_subcommand():
    result = run("core", "--bogus")
    assert result.returncode == 2
    assert result.stderr == (
        "tf2py core: error: unrecognized arguments: --bogus (see tf2py core --help)\n"
    )
    assert "Traceback" not in result.stderr


def test_sigterm_while_the_command_modules_load_is_a_clean_stop():
    # The signal is sent from inside build_parser, i.e. while the subcommands are imported.
    script = (
        "import os, signal, sys, tf2py.cli.main as m\n"
        "build = m.build_parser\n"
        "def early():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return build()\n"
        "m.build_parser = early\n"
        "sys.exit(m.main(['core', '--address', 'tcp://127.0.0.1:0']))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "ready at" not in result.stdout

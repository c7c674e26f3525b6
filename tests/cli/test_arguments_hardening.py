"""Numbers on the command line: huge, infinite, negative-looking and Python-only spellings give
one-line errors or the right value, never a traceback or a wrong transform."""

from __future__ import annotations

import math

import pytest

from tf2py.cli.common import CommandError
from tf2py.cli.main import build_parser
from tf2py.cli.static_transform_publisher import parse


def _static(*argv):
    parser, _ = build_parser()
    return parse(parser.parse_args(["static-transform-publisher", *argv]))


@pytest.mark.parametrize("value", ["1e300", "1_0", "inf", "nan", "0", "-5", "ten"])
def test_server_cache_time_out_of_range_is_a_one_line_error(tf2py, value):
    result = tf2py("server", "--cache-time", value, "--address", "tcp://127.0.0.1:0",
                   "--core", "tcp://127.0.0.1:1")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--cache-time must be a positive number of seconds" in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["1_0", "inf", "0", "ten"])
def test_record_duration_refuses_what_is_not_a_positive_number(tf2py, value, tmp_path):
    result = tf2py("record", "--duration", value, "--core", "tcp://127.0.0.1:1",
                   str(tmp_path / "out.mcap"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--duration" in lines[0], result.stderr
    assert not (tmp_path / "out.mcap").exists()


def test_huge_quaternion_components_normalise_without_overflow():
    _, _, _, q = _static("--qx", "1e308", "--frame-id", "a", "--child-frame-id", "b")
    assert q == pytest.approx((1.0, 0.0, 0.0, 0.0))
    _, _, _, q = _static("--qx", "1e308", "--qw", "1e308", "--frame-id", "a",
                         "--child-frame-id", "b")
    assert q == pytest.approx((math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)))
    _, _, _, q = _static("--qz", "1e-320", "--qw", "0", "--frame-id", "a",
                         "--child-frame-id", "b")  # subnormal: squaring would underflow to 0
    assert q == pytest.approx((0.0, 0.0, 1.0, 0.0))


@pytest.mark.parametrize("argv, message", [
    (["--qx", "0", "--qw", "0"], "the quaternion (0, 0, 0, 0) is not a rotation"),
    (["--qx", "1e309"], "Failed to parse --qx argument as float"),
    (["--x", "-inf"], "Failed to parse --x argument as float"),
    (["--x", "1_0"], "Failed to parse --x argument as float"),
])
def test_unusable_numbers_are_refused(argv, message):
    with pytest.raises(CommandError) as error:
        _static(*argv, "--frame-id", "a", "--child-frame-id", "b")
    assert str(error.value) == message


def test_negative_numbers_in_every_spelling_are_values_not_options():
    _, _, t, _ = _static("--x", "-1e-05", "--y", "-.5", "--z", "-2", "--frame-id", "a",
                         "--child-frame-id", "b")
    assert t == (-1e-05, -0.5, -2.0)


def test_bare_minus_inf_reaches_the_number_check(tf2py):
    result = tf2py("echo", "a", "b", "--rate", "-inf")
    assert result.returncode == 2
    assert "rate must be a positive number of Hz, got '-inf'" in result.stderr


def test_version_prints_the_version(tf2py):
    from tf2py import __version__

    result = tf2py("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tf2py {__version__}"

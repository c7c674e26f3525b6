"""Time and Duration: integer nanoseconds, arithmetic, ordering, seconds accepted everywhere."""

import pytest

from tf2py import Duration, Time
from tf2py.buffer.time import duration_to_nanoseconds, format_seconds, to_nanoseconds


def test_time_keeps_every_nanosecond_of_a_large_stamp():
    t = Time(1_700_000_000, 123_456_789)
    assert t.nanoseconds == 1_700_000_000_123_456_789
    assert (t.sec, t.nanosec) == (1_700_000_000, 123_456_789)


def test_from_seconds_rounds_to_the_nearest_nanosecond():
    assert Time.from_seconds(1.0000000012345).nanoseconds == 1_000_000_001
    assert Duration.from_seconds(1e-40).nanoseconds == 0


def test_from_nanoseconds_round_trips():
    assert Time.from_nanoseconds(5_500_000_000) == Time(5, 500_000_000)


def test_time_is_immutable_and_hashable():
    t = Time(1, 2)
    with pytest.raises(AttributeError):
        t.sec = 3
    assert {t: "x"}[Time(1, 2)] == "x"


def test_times_are_totally_ordered():
    assert Time(1) < Time(1, 1) < Time(2)
    assert sorted([Time(3), Time(1), Time(2)]) == [Time(1), Time(2), Time(3)]
    assert Time(2) >= Time(2)


def test_time_arithmetic_with_durations():
    assert Time(5) - Time(3) == Duration(2)
    assert Time(5) + Duration(0, 1) == Time(5, 1)
    assert Time(5) - Duration(1) == Time(4)
    assert isinstance(Time(5) - Time(3), Duration)


def test_duration_may_be_negative():
    d = Time(1) - Time(3)
    assert d.nanoseconds == -2_000_000_000
    assert d.to_seconds() == -2.0


def test_time_zero_is_falsy():
    assert not Time()
    assert Time(0, 1)


def test_time_now_is_the_wall_clock():
    import time

    before = time.time_ns()
    now = Time.now().nanoseconds
    assert before <= now <= time.time_ns()


def test_float_arguments_to_the_constructor_are_refused():
    with pytest.raises(TypeError, match="from_seconds"):
        Time(1.5)


def test_to_nanoseconds_accepts_time_int_and_float_seconds():
    assert to_nanoseconds(Time(2, 5)) == 2_000_000_005
    assert to_nanoseconds(3) == 3_000_000_000
    assert to_nanoseconds(0.25) == 250_000_000


def test_to_nanoseconds_refuses_other_types_with_a_clear_error():
    with pytest.raises(TypeError, match="Time or a number of seconds"):
        to_nanoseconds("now")
    with pytest.raises(TypeError):
        to_nanoseconds(True)


def test_to_nanoseconds_refuses_nan_and_infinity():
    with pytest.raises(ValueError, match="finite"):
        to_nanoseconds(float("nan"))
    with pytest.raises(ValueError, match="finite"):
        to_nanoseconds(float("inf"))


def test_duration_to_nanoseconds_accepts_duration_and_seconds():
    assert duration_to_nanoseconds(Duration.from_seconds(1.5)) == 1_500_000_000
    assert duration_to_nanoseconds(2.0) == 2_000_000_000


def test_format_seconds_matches_tf2_display():
    # tf2 prints times with %.6f: 1 ns shows as 0, 1.999999999 s rounds up.
    assert format_seconds(0) == "0.000000"
    assert format_seconds(1) == "0.000000"
    assert format_seconds(-1) == "-0.000000"
    assert format_seconds(1000) == "0.000001"
    assert format_seconds(10_000_000_000) == "10.000000"
    assert format_seconds(1_999_999_999) == "2.000000"


def test_a_time_never_equals_a_duration():
    assert Time(1) != Duration(1)
    with pytest.raises(TypeError):
        Time(1) < Duration(2)  # noqa: B015 - the comparison itself must raise


def test_time_and_duration_survive_pickling():
    import pickle

    assert pickle.loads(pickle.dumps(Time(3, 4))) == Time(3, 4)
    assert pickle.loads(pickle.dumps(Duration(-1, 5))) == Duration(-1, 5)

"""The exception hierarchy and the TF2Error codes."""

import pytest

import tf2py
from tf2py.buffer.exceptions import error_code_of, exception_from_code


def test_every_error_derives_from_transform_exception():
    for name in ["LookupException", "ConnectivityException", "ExtrapolationException",
                 "InvalidArgumentException", "TimeoutException"]:
        assert issubclass(getattr(tf2py, name), tf2py.TransformException)


def test_extrapolation_subclasses():
    for name in ["BackwardExtrapolationException", "ForwardExtrapolationException",
                 "NoDataForExtrapolationException"]:
        assert issubclass(getattr(tf2py, name), tf2py.ExtrapolationException)


@pytest.mark.parametrize(
    "exc, code",
    [(tf2py.LookupException("x"), 1), (tf2py.ConnectivityException("x"), 2),
     (tf2py.ExtrapolationException("x"), 3), (tf2py.ForwardExtrapolationException("x"), 3),
     (tf2py.InvalidArgumentException("x"), 4), (tf2py.TimeoutException("x"), 5),
     (tf2py.TransformException("x"), 6), (RuntimeError("x"), 6)],
)
def test_error_codes_are_tf2s(exc, code):
    assert error_code_of(exc)[0] == code


@pytest.mark.parametrize(
    "cls",
    [tf2py.LookupException, tf2py.ConnectivityException, tf2py.InvalidArgumentException,
     tf2py.TimeoutException, tf2py.BackwardExtrapolationException,
     tf2py.ForwardExtrapolationException, tf2py.NoDataForExtrapolationException,
     tf2py.ExtrapolationException, tf2py.TransformException],
)
def test_an_exception_survives_a_round_trip_through_its_code(cls):
    back = exception_from_code(*error_code_of(cls("msg"))[:1], "msg", error_code_of(cls("m"))[1])
    assert type(back) is cls and str(back) == "msg"

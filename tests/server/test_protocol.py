"""The goal protocol's messages: what a goal, a result and a cancel look like, and what the
server refuses."""

from __future__ import annotations

import pytest

from tf2py import (
    ForwardExtrapolationException,
    LookupException,
    NoDataForExtrapolationException,
    make_transform,
)
from tf2py.server import protocol
from tf2py.server.protocol import ProtocolError
from tf2py.transport.wire import pack


def test_goal_round_trips_every_field():
    data = protocol.pack_goal(7, "map", "laser", 2_000_000_001, 3, "odom", True, 1_500_000_000)
    kind, goal_id, goal = protocol.parse_client_message(data)
    assert (kind, goal_id) == (protocol.GOAL, 7)
    assert (goal.target_frame, goal.source_frame, goal.fixed_frame) == ("map", "laser", "odom")
    assert (goal.source_time_ns, goal.target_time_ns) == (2_000_000_001, 3)
    assert goal.advanced is True
    assert goal.timeout_ns == 1_500_000_000


def test_goal_is_a_versioned_msgpack_array():
    data = protocol.pack_goal(1, "a", "b", 0, 0, "", False, 0)
    assert data == pack([protocol.PROTOCOL_VERSION, "goal", 1, "a", "b", 0, 0, "", False, 0])


def test_cancel_parses_to_its_id():
    assert protocol.parse_client_message(protocol.pack_cancel(42)) == (protocol.CANCEL, 42, None)


def test_successful_result_carries_the_transform():
    transform = make_transform("map", "odom", (1, 2, 3), stamp=1.5)
    kind, goal_id, rest = protocol.parse_server_message(protocol.pack_result(9, transform))
    assert (kind, goal_id) == (protocol.RESULT, 9)
    got, exc = protocol.result_outcome(rest)
    assert exc is None and got == transform


@pytest.mark.parametrize(
    "exc",
    [
        LookupException('"x" passed to lookupTransform argument target_frame does not exist. '),
        ForwardExtrapolationException("Lookup would require extrapolation into the future."),
        NoDataForExtrapolationException("no data"),
    ],
)
def test_error_result_rebuilds_the_same_exception_class_and_message(exc):
    _, _, rest = protocol.parse_server_message(protocol.pack_error_result(3, exc))
    got, error = protocol.result_outcome(rest)
    assert got is None
    assert type(error) is type(exc) and str(error) == str(exc)


def test_garbage_has_no_goal_id():
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(b"\xc1\xc1 not msgpack")
    assert info.value.goal_id is None


def test_oversized_message_is_refused_before_decoding():
    with pytest.raises(ProtocolError, match="exceeds") as info:
        protocol.parse_client_message(b"\x00" * (protocol.MAX_GOAL_BYTES + 1))
    assert info.value.goal_id is None


@pytest.mark.parametrize(
    "fields, match",
    [
        ([1, "goal", 5, "a", "b", 0, 0, ""], "8 fields"),
        ([1, "goal", 5, 3, "b", 0, 0, "", False, 0], "target_frame must be a string"),
        ([1, "goal", 5, "a", "b", 0.5, 0, "", False, 0], "source_time must be an integer"),
        ([1, "goal", 5, "a", "b", 0, 0, "", "yes", 0], "advanced must be a boolean"),
        ([1, "goal", 5, "a", "b", 0, 0, "", False, 2**63], "timeout must be an integer"),
        ([1, "goal", 5, "a" * 5000, "b", 0, 0, "", False, 0], "longer than"),
        ([1, "fetch", 5], "unknown message type"),
        ([99, "goal", 5, "a", "b", 0, 0, "", False, 0], "unsupported protocol version 99"),
    ],
)
def test_malformed_goal_with_an_id_names_the_problem_and_keeps_the_id(fields, match):
    with pytest.raises(ProtocolError, match=match) as info:
        protocol.parse_client_message(pack(fields))
    assert info.value.goal_id == 5


@pytest.mark.parametrize("fields", [{"id": 1}, [1, "goal"], [1, "goal", -1], [1, "goal", "7"]])
def test_message_without_a_usable_id_cannot_be_answered(fields):
    with pytest.raises(ProtocolError) as info:
        protocol.parse_client_message(pack(fields))
    assert info.value.goal_id is None

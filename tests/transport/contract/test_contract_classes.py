"""The public classes on every bus: what each builds is an instance of the public class (and
of the interface's protocol), the classes read as real classes, and a bad address is refused
with one line."""

from __future__ import annotations

import inspect

import pytest

from tf2py import Buffer, StaticTransformBroadcaster, TransformBroadcaster, TransformListener
from tf2py.transport.clock import ClockPublisher, SimClock
from tf2py.transport.interface import ClockReceiver, ClockSender, TransformReceiver, TransformSender
from tf2py.transport.listener import TransformSubscriber

#: public class -> (how to build one on an address, the protocol it satisfies)
KINDS = {
    "TransformBroadcaster": (TransformBroadcaster, lambda a: TransformBroadcaster(core=a),
                             TransformSender),
    "StaticTransformBroadcaster": (StaticTransformBroadcaster,
                                   lambda a: StaticTransformBroadcaster(core=a),
                                   TransformSender),
    "TransformListener": (TransformListener, lambda a: TransformListener(Buffer(), core=a),
                          TransformReceiver),
    "TransformSubscriber": (TransformSubscriber,
                            lambda a: TransformSubscriber(core=a, on_batch=lambda batch: None),
                            TransformReceiver),
    "SimClock": (SimClock, lambda a: SimClock(core=a), ClockReceiver),
    "ClockPublisher": (ClockPublisher, lambda a: ClockPublisher(core=a), ClockSender),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_what_a_bus_builds_is_an_instance_of_the_public_class(bus, kind):
    public, make, protocol = KINDS[kind]
    with make(bus.address) as built:
        assert isinstance(built, public), f"{type(built).__name__} on {bus.name}"
        assert isinstance(built, protocol)
        others = [cls for cls, _, _ in KINDS.values() if cls is not public]
        assert not any(isinstance(built, other) for other in others)


@pytest.mark.parametrize("public", [TransformBroadcaster, StaticTransformBroadcaster])
def test_the_broadcaster_classes_show_their_signature_and_methods(public):
    parameters = list(inspect.signature(public).parameters)
    assert parameters == ["core", "authority", "keys"]
    assert "send_transform" in vars(public)
    assert inspect.getdoc(public.send_transform)
    for method in ("close", "__enter__", "__exit__"):
        assert callable(getattr(public, method))


def test_a_bad_address_is_refused_with_one_line_naming_it(bus):
    for address, words in bus.bad_addresses():
        with pytest.raises(ValueError) as refused:
            TransformListener(Buffer(), core=address)
        message = str(refused.value)
        assert "\n" not in message and words in message, (address, message)


@pytest.mark.parametrize("wrong", ["world", 42, None])
def test_a_wrong_argument_is_a_type_error(bus, wrong):
    for public in (TransformBroadcaster, StaticTransformBroadcaster):
        with public(core=bus.address) as broadcaster:
            with pytest.raises(TypeError):
                broadcaster.send_transform(wrong)
    with pytest.raises(TypeError):
        TransformListener(wrong, core=bus.address)

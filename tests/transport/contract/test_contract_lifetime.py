"""Lifetimes on every bus: ``close()`` twice and context managers; an object dropped without
``close()`` warns ``ResourceWarning`` and lets go of its threads; a process that leaves its
objects open still exits."""

from __future__ import annotations

import gc
import sys
import threading
import warnings

import pytest

from contract_support import subprocess_env
from helpers import wait_for
from tf2py import Buffer, StaticTransformBroadcaster, TransformBroadcaster, TransformListener, make_transform
from tf2py.transport.clock import ClockPublisher, SimClock
from tf2py.transport.listener import TransformSubscriber

MAKERS = {
    "TransformBroadcaster": lambda a: TransformBroadcaster(core=a),
    "StaticTransformBroadcaster": lambda a: StaticTransformBroadcaster(core=a),
    "TransformListener": lambda a: TransformListener(Buffer(), core=a),
    "TransformSubscriber": lambda a: TransformSubscriber(core=a, on_batch=lambda batch: None),
    "SimClock": lambda a: SimClock(core=a),
    "ClockPublisher": lambda a: ClockPublisher(core=a),
}

#: Makes one of each object on the bus (argv[1]) and ends without closing any.
LEAVES_EVERYTHING_OPEN = """
import sys
from tf2py import (Buffer, StaticTransformBroadcaster, TransformBroadcaster,
                   TransformListener, make_transform)
from tf2py.transport.clock import ClockPublisher, SimClock
from tf2py.transport.listener import TransformSubscriber
core = sys.argv[1]
kept = [TransformListener(Buffer(), core=core),
        TransformSubscriber(core=core, on_batch=lambda batch: None), SimClock(core=core)]
sender, static, clock = (TransformBroadcaster(core=core), StaticTransformBroadcaster(core=core),
                         ClockPublisher(core=core))
sender.send_transform(make_transform("world", "open", stamp=1))
static.send_transform(make_transform("world", "open_static"))
clock.publish(1.0)
print("leaving", flush=True)
"""


@pytest.fixture(scope="module")
def keeper(bus):
    """A listener open for the whole module, so the bus's shared parts (a ROS 2 participant,
    a Zenoh session) outlive each test and only an object's own threads are counted."""
    with TransformListener(Buffer(), core=bus.address) as listener:
        yield listener


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_close_twice_and_the_context_manager(bus, kind):
    made = MAKERS[kind](bus.address)
    with made as entered:
        assert entered is made
    made.close()
    made.close()


@pytest.mark.parametrize("kind", ["TransformBroadcaster", "StaticTransformBroadcaster",
                                  "ClockPublisher"])
def test_sending_on_a_closed_sender_raises(bus, kind):
    with MAKERS[kind](bus.address) as sender:
        pass
    with pytest.raises(RuntimeError):
        if kind == "ClockPublisher":
            sender.publish(1.0)
        else:
            sender.send_transform(make_transform("world", "after_close"))


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_an_unclosed_object_warns_and_lets_go_of_its_threads(bus, keeper, kind):
    before = set(threading.enumerate())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = MAKERS[kind](bus.address)
        name = type(made).__name__
        del made

        def warned() -> bool:
            # (a receive thread may hold it a moment longer, inside a callback)
            gc.collect()
            return any(issubclass(w.category, ResourceWarning) for w in caught)

        wait_for(warned, 10, message=f"a ResourceWarning for an unclosed {name} on {bus.name}")
    wait_for(lambda: not [t for t in threading.enumerate() if t not in before and t.is_alive()],
             10, message=lambda: f"threads left by an unclosed {name}: "
             f"{[t.name for t in threading.enumerate() if t not in before]}")


def test_a_process_that_leaves_its_objects_open_exits(bus, spawn):
    proc = spawn([sys.executable, "-X", "dev", "-c", LEAVES_EVERYTHING_OPEN, bus.address],
                 env=subprocess_env(bus))
    proc.wait_for_line("leaving", timeout=60)
    assert proc.wait(timeout=30) == 0, proc.output()

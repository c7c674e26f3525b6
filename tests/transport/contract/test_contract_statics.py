"""Latched statics on every bus: a listener that starts later gets every live publisher's
current set (latest per child frame); a publisher that dies stops being given to listeners
that start later (within 5 s), while those that hold its statics keep them; an invalid
static never replaces a valid latched one."""

from __future__ import annotations

import math
import signal
import sys

import pytest

from contract_support import DISCOVERY_TIMEOUT, subprocess_env, wait_until_heard
from helpers import wait_for
from tf2py import Buffer, StaticTransformBroadcaster, TransformListener, make_transform

STATIC_PUBLISHER = """
import signal, sys
from tf2py import StaticTransformBroadcaster, make_transform
core, child = sys.argv[1:3]
publisher = StaticTransformBroadcaster(core=core)
publisher.send_transform(make_transform("world", child, (5.0, 0.0, 0.0)))
print("sent", flush=True)
signal.pause()
"""

#: The contract's bound on forgetting a dead publisher's statics, plus room for a listener's
#: start (discovery) on a loaded machine.
EXPIRY_DEADLINE = 5.0 + 15.0


def x_of(buffer: Buffer, parent: str, child: str) -> float:
    return float(buffer.lookup_transform(parent, child, 0).transform.translation.x)


def test_a_late_listener_gets_the_latest_of_each_static_frame(bus, names):
    first, second = names("first"), names("second")
    with StaticTransformBroadcaster(core=bus.address) as static:
        static.send_transform(make_transform("world", first, (1.0, 0.0, 0.0)))
        static.send_transform(make_transform("world", second, (2.0, 0.0, 0.0)))
        static.send_transform(make_transform("world", first, (3.0, 0.0, 0.0)))  # replaces
        late = Buffer()
        with TransformListener(late, core=bus.address):
            wait_until_heard(late, "world", first)
            wait_until_heard(late, "world", second)
            assert x_of(late, "world", first) == 3.0
            assert x_of(late, "world", second) == 2.0


def test_a_dead_publishers_statics_are_not_given_to_later_listeners(bus, names, spawn):
    dead, alive = names("dead"), names("alive")
    holder = Buffer()
    with TransformListener(holder, core=bus.address), \
            StaticTransformBroadcaster(core=bus.address) as witness:
        witness.send_transform(make_transform("world", alive, (1.0, 0.0, 0.0)))
        proc = spawn([sys.executable, "-c", STATIC_PUBLISHER, bus.address, dead],
                     env=subprocess_env(bus))
        proc.wait_for_line("sent", timeout=DISCOVERY_TIMEOUT)
        wait_until_heard(holder, "world", dead)
        proc.popen.send_signal(signal.SIGKILL)  # no goodbye
        proc.wait()

        def a_new_listener_gets_only_the_live_set() -> bool:
            late = Buffer()
            with TransformListener(late, core=bus.address):
                # the live publisher's set comes the way the dead one's would
                wait_until_heard(late, "world", alive)
                return not late.can_transform("world", dead, 0)

        wait_for(a_new_listener_gets_only_the_live_set, EXPIRY_DEADLINE, interval=0.2,
                 message=f"a listener started after {dead}'s publisher died without it")
        # a listener that already held it keeps it, as tf2 does
        assert holder.can_transform("world", dead, 0)


@pytest.mark.parametrize("bad", ["nan", "empty_parent", "bad_quaternion", "own_parent"])
def test_an_invalid_static_never_replaces_the_latched_valid_one(bus, names, bad):
    cam = names("cam")
    invalid = {
        "nan": make_transform("world", cam, (math.nan, 0.0, 0.0)),
        "empty_parent": make_transform("", cam),
        "bad_quaternion": make_transform("world", cam, rotation=(0.0, 0.0, 0.0, 0.5)),
        "own_parent": make_transform(cam, cam),
    }[bad]
    with StaticTransformBroadcaster(core=bus.address) as static:
        static.send_transform(make_transform("world", cam, (1.0, 2.0, 3.0)))
        static.send_transform(invalid)
        static.send_transform(make_transform("world", names("other"), (4.0, 0.0, 0.0)))
        late = Buffer()
        with TransformListener(late, core=bus.address):
            wait_until_heard(late, "world", names("other"))  # the whole set has come
            assert x_of(late, "world", cam) == 1.0
        assert static.dropped.snapshot() == {"invalid": 1}  # dropped and counted

"""tf2py on zenoh:// against a reference rmw_zenoh peer (reference_peer.py: zenoh-python and
rosbags, nothing of tf2py), through a real router, each in its own process."""

from __future__ import annotations

import pytest

import tf2py
from helpers import raising_buffer, stalling_buffer, wait_for
from tf2py import Buffer, StaticTransformBroadcaster, TransformBroadcaster, TransformListener
from tf2py.buffer.messages import TransformStamped
from tf2py.transport.zenoh import wire
from zenoh_support import records, start_peer, start_router

TF_KEY = f"tf2_msgs::msg::dds_::TFMessage_/{wire.TYPE_HASH}"


def transform(parent: str, child: str, x: float, sec: int = 5) -> TransformStamped:
    t = TransformStamped()
    t.header.frame_id = parent
    t.child_frame_id = child
    t.header.stamp = tf2py.Time(sec, 7)
    t.transform.translation.x = x
    t.transform.rotation.w = 1.0
    return t


@pytest.fixture
def router(spawn, tf2py_command):
    return start_router(spawn, tf2py_command)[1]


def test_tf2py_broadcaster_is_heard_by_an_rmw_zenoh_subscriber(router, spawn):
    peer = start_peer(spawn, router, 0, "/robot7", "listen")
    with TransformBroadcaster(core=f"zenoh://{router}?namespace=/robot7") as broadcaster:
        def heard():
            broadcaster.send_transform(transform("odom", "base_link", 1.5))
            return records(peer, "sample")
        samples = wait_for(heard, timeout=15)
    sample = samples[0]["sample"]
    assert sample["key"] == f"0/robot7/tf/{TF_KEY}"
    assert sample["transforms"][0] == ["odom", "base_link", 5, 7, 1.5, 1.0]
    assert sample["sequence"] >= 1
    # The GID in the attachment is the XXH3 of the publisher's liveliness token.
    tokens = [r["token"] for r in records(peer, "token") if "/MP/" in r["token"]]
    assert sample["gid"] in [wire.gid_of(t).hex() for t in tokens]
    mine = [t for t in tokens if wire.gid_of(t).hex() == sample["gid"]][0]
    entity = wire.parse_liveliness_keyexpr(mine)
    assert (entity.namespace, entity.topic_name, entity.qos) == (
        "/robot7", "/robot7/tf", "::,100:,:,:,,")
    nodes = [r["token"] for r in records(peer, "token") if "/NN/" in r["token"]]
    assert any(wire.parse_liveliness_keyexpr(t).node_name == entity.node_name for t in nodes)


def test_rmw_zenoh_publisher_fills_a_tf2py_buffer(router, spawn):
    buffer = Buffer()
    with TransformListener(buffer, core=f"zenoh://{router}?namespace=/robot7") as listener:
        start_peer(spawn, router, 0, "/robot7", "publish", "map", "odom", "200")
        wait_for(lambda: buffer.can_transform("map", "odom", tf2py.Time()), timeout=15)
        t = buffer.lookup_transform("map", "odom", tf2py.Time())
        assert t.transform.translation.y == 2.0
        assert listener.stats()["received_messages"] >= 1


def test_received_counts_only_what_the_buffer_already_holds(router, spawn):
    buffer = stalling_buffer(0.3)
    with TransformListener(buffer, core=f"zenoh://{router}?namespace=/robot7") as listener:
        start_peer(spawn, router, 0, "/robot7", "publish", "map", "odom", "200")
        wait_for(lambda: listener.received_transforms >= 1, timeout=15,
                 message=lambda: listener.stats())
        # Read the moment the count said so: the counted transform can be looked up.
        assert buffer.can_transform("map", "odom", tf2py.Time())


def test_a_buffer_that_raises_is_counted_and_the_listener_goes_on(router):
    buffer = raising_buffer("boom")
    address = f"zenoh://{router}?namespace=/robot7"
    with TransformListener(buffer, core=address) as listener, \
            TransformBroadcaster(core=address) as broadcaster:
        def sent(child, condition):
            broadcaster.send_transform(transform("map", child, 1.0))
            return condition()
        wait_for(lambda: sent("boom", lambda: listener.stats()["dropped"].get("error")),
                 timeout=15, message=lambda: listener.stats())
        wait_for(lambda: sent("fine", lambda: buffer.can_transform("map", "fine", tf2py.Time())),
                 timeout=15, message=lambda: listener.stats())
        assert not buffer.can_transform("map", "boom", tf2py.Time())


def test_late_tf2py_listener_gets_an_rmw_zenoh_static(router, spawn):
    start_peer(spawn, router, 0, "/", "publish-static", "world", "map", "4.0")
    buffer = Buffer()
    with TransformListener(buffer, core=f"zenoh://{router}"):
        wait_for(lambda: buffer.can_transform("world", "map", tf2py.Time()), timeout=15)
        assert buffer.lookup_transform("world", "map", tf2py.Time()).transform.translation.x \
            == 4.0


def test_late_rmw_zenoh_subscriber_gets_a_tf2py_static(router, spawn):
    with StaticTransformBroadcaster(core=f"zenoh://{router}") as broadcaster:
        broadcaster.send_transform(transform("world", "dock", 3.0))
        broadcaster.send_transform(transform("world", "charger", 4.0))
        peer = start_peer(spawn, router, 0, "/", "listen")
        samples = wait_for(lambda: [r for r in records(peer, "sample")
                                    if r["sample"]["topic"] == "tf_static"], timeout=15)
    sample = samples[-1]["sample"]
    assert sample["key"] == f"0/tf_static/{TF_KEY}"
    assert sorted(t[1] for t in sample["transforms"]) == ["charger", "dock"]


def test_namespaces_and_domains_keep_apart(router, spawn):
    right, wrong_ns, wrong_domain = Buffer(), Buffer(), Buffer()
    with TransformListener(right, core=f"zenoh://{router}?namespace=/robot3&domain=3"), \
            TransformListener(wrong_ns, core=f"zenoh://{router}?namespace=/robot4&domain=3"), \
            TransformListener(wrong_domain, core=f"zenoh://{router}?namespace=/robot3"):
        start_peer(spawn, router, 3, "/robot3", "publish", "map", "odom", "100")
        wait_for(lambda: right.can_transform("map", "odom", tf2py.Time()), timeout=15)
        assert not wrong_ns.can_transform("map", "odom", tf2py.Time())
        assert not wrong_domain.can_transform("map", "odom", tf2py.Time())


def test_garbage_and_wrong_typed_samples_are_counted_and_dropped(router, spawn):
    buffer = Buffer()
    with TransformListener(buffer, core=f"zenoh://{router}") as listener:
        start_peer(spawn, router, 0, "/", "garbage")
        wait_for(lambda: buffer.can_transform("good_parent", "good_child", tf2py.Time()),
                 timeout=15)
        # No attachment, one of 5 bytes; a bad payload, a Clock on /tf: each counted.
        dropped = wait_for(lambda: (lambda d: d if d.get("attachment", 0) >= 1
                                    and d.get("garbage", 0) + d.get("too_large", 0) >= 1
                                    else None)(listener.stats()["dropped"]), timeout=10)
        assert set(dropped) <= {"attachment", "garbage", "too_large", "gap"}
        assert buffer.all_frames_as_string().count("good_child") == 1

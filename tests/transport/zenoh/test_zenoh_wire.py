"""rmw_zenoh's wire, checked against independent sources: rosbags' type hashes, Zenoh's own
serializer, rmw_zenoh's documented examples."""

from __future__ import annotations

import pytest

from tf2py.transport.zenoh import wire

zenoh = pytest.importorskip("zenoh")


def test_type_hash_is_rosbags_rihs01_of_tfmessage():
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    assert wire.TYPE_HASH == store.hash_rihs01("tf2_msgs/msg/TFMessage")
    from tf2py.transport.zenoh.clock import CLOCK_TYPE_HASH

    assert CLOCK_TYPE_HASH == store.hash_rihs01("rosgraph_msgs/msg/Clock")


def test_key_expressions_follow_rmw_zenoh():
    assert wire.topic_keyexpr(0, "/", False) == f"0/tf/{wire.TYPE_NAME}/{wire.TYPE_HASH}"
    assert wire.topic_keyexpr(2, "/robot1", True) == \
        f"2/robot1/tf_static/{wire.TYPE_NAME}/{wire.TYPE_HASH}"
    parsed = wire.parse_topic_keyexpr(wire.topic_keyexpr(5, "/a/b", True))
    assert parsed == wire.TopicKey(5, "/a/b", True)
    with pytest.raises(wire.WireError):
        wire.parse_topic_keyexpr(f"0/tf/std_msgs::msg::dds_::String_/{wire.TYPE_HASH}")


def test_all_namespaces_keyexpr_matches_root_and_nested_namespaces():
    everything = zenoh.KeyExpr(wire.all_namespaces_keyexpr(0, False))
    for ns in ("/", "/robot7", "/fleet/robot7"):
        assert everything.intersects(zenoh.KeyExpr(wire.topic_keyexpr(0, ns, False)))
    assert not everything.intersects(zenoh.KeyExpr(wire.topic_keyexpr(1, "/", False)))
    assert not everything.intersects(zenoh.KeyExpr(wire.topic_keyexpr(0, "/", True)))


def test_qos_text_of_tf2_ros_profiles():
    # rmw_zenoh's design.md: a keep-last 10 reliable volatile subscription is "::,10:,:,:,,"
    assert wire.qos_keyexpr(depth=10) == "::,10:,:,:,,"
    assert wire.QOS_TF_PUBLISHER == "::,100:,:,:,,"
    assert wire.QOS_TF_STATIC_PUBLISHER == ":1:,1:,:,:,,"
    assert wire.QOS_TF_STATIC_SUBSCRIPTION == ":1:,100:,:,:,,"
    assert wire.qos_keyexpr(reliability=wire.BEST_EFFORT, depth=1) == "2::,1:,:,:,,"


def test_liveliness_token_matches_the_design_example_and_parses_back():
    # design.md: "@ros2_lv/2/aac3.../0/10/MS/%/%/listener/%chatter/std_msgs::msg::dds_::
    # String_/RIHS01_df66.../::,10:,:,:,," -- ours for /tf, same shape.
    token = wire.liveliness_keyexpr(2, "aac3178e146ba6f1fc6e6a4085e77f21", 0, 10, "MS", "/",
                                    "listener", "/tf", "::,10:,:,:,,")
    assert token == ("@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/10/MS/%/%/listener/%tf/"
                     f"{wire.TYPE_NAME}/{wire.TYPE_HASH}/::,10:,:,:,,")
    entity = wire.parse_liveliness_keyexpr(token)
    assert (entity.kind, entity.namespace, entity.topic_name) == ("MS", "/", "/tf")
    node = wire.liveliness_keyexpr(2, "aac3", 0, 0, "NN", "/robot7", "n")
    assert node == "@ros2_lv/2/aac3/0/0/NN/%/%robot7/n"


@pytest.mark.parametrize("bad", ["@ros2_lv/0/z/0/0/NN/%/%", "@other/0/z/0/0/NN/%/%/n",
                                 "@ros2_lv/0/z/0/1/XX/%/%/n", "@ros2_lv/0/z/0/1/MP/%/%/n/%tf",
                                 "@ros2_lv/0/z//1/NN/%/%/n"])
def test_malformed_tokens_are_refused(bad):
    with pytest.raises(wire.WireError):
        wire.parse_liveliness_keyexpr(bad)


def test_attachment_is_zenohs_serialization_of_int64_int64_and_16_bytes():
    import zenoh.ext as zext

    gid = bytes(range(16))
    ours = wire.encode_attachment(7, 1_700_000_000_123_456_789, gid)
    theirs = zext.z_serialize((zext.Int64(7), zext.Int64(1_700_000_000_123_456_789), gid))
    assert ours == theirs.to_bytes() and len(ours) == 33
    assert wire.decode_attachment(ours) == (7, 1_700_000_000_123_456_789, gid)
    for bad in (None, b"", ours[:-1], ours[:16] + b"\x0f" + ours[17:]):
        with pytest.raises(wire.WireError):
            wire.decode_attachment(bad)


def test_gid_is_xxh3_128_low_half_first():
    import xxhash

    token = "@ros2_lv/0/abc/0/1/MP/%/%/n/%tf/x/y/::,100:,:,:,,"
    digest = xxhash.xxh3_128(token.encode()).digest()  # canonical: big-endian
    assert wire.gid_of(token) == digest[8:][::-1] + digest[:8][::-1]

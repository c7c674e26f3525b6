"""Helpers for the bag tests: the shared real recordings, and small bags written on demand."""

from __future__ import annotations

from helpers import SHARED_DATA

NAV2 = SHARED_DATA / "nav2_turtlebot.mcap"
TF_EXAMPLE_ROS2 = SHARED_DATA / "tf_example"
TF_EXAMPLE_ROS1 = SHARED_DATA / "tf_example.bag"
TURTLESIM = SHARED_DATA / "turtlesim_example.bag"

ALL_RECORDINGS = [NAV2, TF_EXAMPLE_ROS2, TF_EXAMPLE_ROS1, TURTLESIM]

IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def write_bag(path, messages):
    """Write an MCAP with tf2py's BagWriter; ``messages`` is a list of
    ``(is_static, log_ns, rows)`` with rows ``(parent, child, stamp_ns, values7)``."""
    from tf2py.bag import BagWriter

    with BagWriter(path) as writer:
        for is_static, log_ns, rows in messages:
            writer.write_rows(rows, is_static, log_ns)
    return path


def write_mcap_raw(path, topic, schema_name, data_list, schema_text="", encoding="cdr"):
    """Write an MCAP whose ``topic`` carries the given raw message bytes, with any schema
    name: for bags with the wrong type or undecodable messages."""
    from mcap.writer import Writer

    with open(path, "wb") as f:
        writer = Writer(f)
        writer.start(profile="ros2", library="tf2py-tests")
        schema_id = writer.register_schema(schema_name, "ros2msg", schema_text.encode())
        channel_id = writer.register_channel(topic, encoding, schema_id)
        for i, data in enumerate(data_list):
            writer.add_message(channel_id, log_time=1000 + i, data=data, publish_time=1000 + i)
        writer.finish()
    return path

"""Robots from key expressions and liveliness tokens; frame prefixing; --robots."""

from __future__ import annotations

import pytest

from tf2py.server.fleet.names import (
    TF_TYPE,
    RobotFilter,
    is_tf_publisher,
    prefix_frame,
    robot_of_data_key,
    robot_of_token,
)

HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"


def test_data_key_of_a_namespace_names_the_robot_and_topic():
    assert robot_of_data_key(f"0/robot7/tf/{TF_TYPE}/{HASH}") == ("robot7", "tf", TF_TYPE)
    assert robot_of_data_key(f"3/robot7/tf_static/{TF_TYPE}/{HASH}") == (
        "robot7", "tf_static", TF_TYPE)


def test_data_key_of_the_root_namespace_is_the_robot_without_a_name():
    assert robot_of_data_key(f"0/tf/{TF_TYPE}/{HASH}") == ("", "tf", TF_TYPE)


def test_data_key_of_a_nested_namespace_keeps_its_slashes():
    assert robot_of_data_key(f"0/site_a/robot7/tf/{TF_TYPE}/{HASH}")[0] == "site_a/robot7"


@pytest.mark.parametrize("key", [
    f"x/robot7/tf/{TF_TYPE}/{HASH}",          # no domain
    f"0/robot7/scan/{TF_TYPE}/{HASH}",        # another topic
    f"0/robot-7/tf/{TF_TYPE}/{HASH}",         # not a ROS name
    f"0/7robot/tf/{TF_TYPE}/{HASH}",
    "0/tf",
])
def test_data_keys_that_name_no_robot_are_refused(key):
    assert robot_of_data_key(key) is None


def test_data_key_of_another_type_reports_that_type():
    assert robot_of_data_key(f"0/r1/tf/std_msgs::msg::dds_::String_/{HASH}")[2] == (
        "std_msgs::msg::dds_::String_")


def token(namespace="%robot7", kind="MP", topic="%robot7%tf", node="tf_pub"):
    return (f"@ros2_lv/0/1a2b3c/7/12/{kind}/%/{namespace}/{node}/{topic}/{TF_TYPE}/{HASH}/"
            "::,1:,:,:,,")


def test_a_tf_publisher_token_names_its_robot():
    parsed = robot_of_token(token())
    assert (parsed.domain, parsed.kind, parsed.robot, parsed.node, parsed.topic) == (
        0, "MP", "robot7", "tf_pub", "/robot7/tf")
    assert is_tf_publisher(parsed)
    assert is_tf_publisher(robot_of_token(token(topic="%robot7%tf_static")))


def test_a_root_namespace_token_is_the_unnamed_robot():
    parsed = robot_of_token(token(namespace="%", topic="%tf"))
    assert parsed.robot == "" and is_tf_publisher(parsed)


def test_tokens_of_other_entities_are_not_tf_publishers():
    assert not is_tf_publisher(robot_of_token(token(kind="MS")))
    assert not is_tf_publisher(robot_of_token(token(topic="%robot7%scan")))
    node = robot_of_token("@ros2_lv/0/1a2b3c/7/7/NN/%/%robot7/tf_pub")
    assert node.robot == "robot7" and not is_tf_publisher(node)


@pytest.mark.parametrize("key", ["@ros2_lv/0/a/b", "other/0/1/2/3/MP/%/%r/n/%r%tf/T/H/q",
                                 "@ros2_lv/x/1/2/3/MP/%/%r/n/%r%tf/T/H/q",
                                 "@ros2_lv/0/1/2/3/MP/%/%bad-name/n/%r%tf/T/H/q"])
def test_malformed_tokens_are_refused(key):
    assert robot_of_token(key) is None


def test_frames_are_prefixed_with_the_namespace_and_root_keeps_plain_names():
    assert prefix_frame("robot7", "base_link") == "robot7/base_link"
    assert prefix_frame("robot7", "/base_link") == "robot7/base_link"
    assert prefix_frame("", "map") == "map"


def test_robot_filter_matches_globs_without_the_leading_slash():
    keep = RobotFilter("/robot*")
    assert keep("robot7") and not keep("drone1") and not keep("")
    assert RobotFilter(None)("anything")
    with pytest.raises(ValueError, match="--robots"):
        RobotFilter("  ")

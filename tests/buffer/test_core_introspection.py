"""BufferCore introspection: chain, all_frames_as_yaml/string, get_frames, frames_info,
clear (tf2-reference §5)."""

from __future__ import annotations

import pytest

from tf2py import ConnectivityException, LookupException, make_transform
from tf2py.buffer.core import BufferCore


def put(core, parent, child, t, static=False, authority="test"):
    ts = make_transform(parent, child, stamp=t)
    if static:
        return core.set_transform_static(ts, authority)
    return core.set_transform(ts, authority)


@pytest.fixture
def tree():
    """a -> b -> c and a -> d -> e (a is the root)."""
    core = BufferCore()
    for parent, child in (("a", "b"), ("b", "c"), ("a", "d"), ("d", "e")):
        put(core, parent, child, 1.0)
    return core


# --- chain (ROS 1 _chainAsVector examples, §5) -------------------------------------------------


@pytest.mark.parametrize(
    "target, source, fixed, expected",
    [
        ("c", "c", "c", []),
        ("a", "c", "c", ["c", "b", "a"]),
        ("c", "a", "c", ["a", "b", "c"]),
        ("a", "c", "a", ["c", "b", "a"]),
        ("c", "a", "a", ["a", "b", "c"]),
        ("c", "e", "c", ["e", "d", "a", "b", "c"]),
        ("c", "e", "a", ["e", "d", "a", "b", "c"]),
        ("c", "e", "e", ["e", "d", "a", "b", "c"]),
        ("d", "c", "a", ["c", "b", "a", "d"]),
    ],
)
def test_chain_examples(tree, target, source, fixed, expected):
    assert tree.chain(target, 0, source, 0, fixed) == expected


def test_chain_walks_a_line(tree):
    core = BufferCore()
    for parent, child in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")):
        put(core, parent, child, 1.0)
    assert core.chain("a", 0, "e", 0, "a") == ["e", "d", "c", "b", "a"]


def test_chain_with_equal_nonzero_times_still_walks_both_sides(tree):
    assert tree.chain("c", 1.0, "e", 1.0, "a") == ["e", "d", "a", "b", "c"]


def test_chain_stops_at_lowest_common_ancestor():
    core = BufferCore()
    for parent, child in (("r", "a"), ("a", "b"), ("a", "c")):
        put(core, parent, child, 1.0)
    assert core.chain("c", 0, "b", 0, "b") == ["b", "a", "c"]


def test_chain_unknown_frame_raises(tree):
    with pytest.raises(LookupException, match='"zz" passed to chain argument fixed_frame'):
        tree.chain("a", 0, "c", 0, "zz")


def test_chain_disconnected_raises(tree):
    put(tree, "x", "y", 1.0)
    with pytest.raises(ConnectivityException):
        tree.chain("a", 0, "y", 0, "a")


# --- text reports --------------------------------------------------------------------------


def test_all_frames_as_string_layout(tree):
    assert tree.all_frames_as_string() == (
        "Frame b exists with parent a.\n"
        "Frame c exists with parent b.\n"
        "Frame d exists with parent a.\n"
        "Frame e exists with parent d.\n"
    )


def test_all_frames_as_string_empty_buffer():
    assert BufferCore().all_frames_as_string() == ""


def test_all_frames_as_string_after_clear_says_no_parent():
    core = BufferCore()
    put(core, "a", "b", 1.0)
    core.clear()
    assert core.all_frames_as_string() == "Frame b exists with parent NO_PARENT.\n"


def test_all_frames_as_yaml_empty_is_brackets():
    assert BufferCore().all_frames_as_yaml() == "[]"


def test_all_frames_as_yaml_after_clear_is_empty_string():
    core = BufferCore()
    put(core, "a", "b", 1.0)
    core.clear()
    assert core.all_frames_as_yaml() == ""


def test_all_frames_as_yaml_layout():
    core = BufferCore()
    put(core, "odom", "base", 1.0, authority="robot")
    put(core, "odom", "base", 2.0, authority="robot")
    put(core, "base", "laser", 7.0, static=True, authority="static")
    assert core.all_frames_as_yaml() == (
        "base: \n"
        "  parent: 'odom'\n"
        "  broadcaster: 'robot'\n"
        "  rate: 2.000\n"
        "  most_recent_transform: 2.000000\n"
        "  oldest_transform: 1.000000\n"
        "  buffer_length: 1.000\n"
        "laser: \n"
        "  parent: 'base'\n"
        "  broadcaster: 'static'\n"
        "  rate: 10000.000\n"
        "  most_recent_transform: 0.000000\n"
        "  oldest_transform: 0.000000\n"
        "  buffer_length: 0.000\n"
    )


def test_yaml_parses_as_yaml():
    yaml = pytest.importorskip("yaml")
    core = BufferCore()
    put(core, "odom", "base", 1.0)
    data = yaml.safe_load(core.all_frames_as_yaml())
    assert data["base"]["parent"] == "odom"


def test_frames_info_fields():
    core = BufferCore()
    put(core, "odom", "base", 1.0, authority="robot")
    put(core, "odom", "base", 3.0, authority="robot")
    info = core.frames_info()
    assert info == {
        "base": {
            "parent": "odom",
            "broadcaster": "robot",
            "rate": 1.0,
            "most_recent_ns": 3_000_000_000,
            "oldest_ns": 1_000_000_000,
            "buffer_length": 2,
            "buffer_seconds": 2.0,
            "is_static": False,
        }
    }


# --- frames ---------------------------------------------------------------------------------


def test_get_frames_sorted_including_roots(tree):
    assert tree.get_frames() == ["a", "b", "c", "d", "e"]


def test_clear_keeps_frames_registered(tree):
    tree.clear()
    assert tree.get_frames() == ["a", "b", "c", "d", "e"]
    assert not tree.can_transform("a", "c", 1.0)


def test_frame_that_was_only_a_parent_is_a_root(tree):
    assert tree.get_parent("a", 1.0) is None
    assert tree.can_transform("a", "e", 1.0)

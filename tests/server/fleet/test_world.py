"""--world files: the statics relating robots, and one-line errors for bad ones."""

from __future__ import annotations

import pytest

from tf2py.server.fleet.world import WorldError, load_world, world_transforms


def write(tmp_path, text):
    path = tmp_path / "world.yaml"
    path.write_text(text)
    return str(path)


def test_world_file_gives_its_statics_in_order(tmp_path):
    path = write(tmp_path, """
- {parent: world, child: robot7/map, translation: [10, 0, 0], rotation: [0, 0, 0, 1]}
- {parent: world, child: robot3/map, translation: [0, 5, 0], rotation: [0, 0, 0.7071068, 0.7071068]}
- {parent: /world, child: dock}
""")
    statics = load_world(path)
    assert [(s.parent, s.child) for s in statics] == [
        ("world", "robot7/map"), ("world", "robot3/map"), ("world", "dock")]
    assert statics[0].values == (10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    assert statics[2].values == (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    rows = world_transforms(statics)
    assert rows.values.shape == (3, 7) and list(rows.stamps_ns) == [0, 0, 0]


def test_empty_world_file_has_no_statics(tmp_path):
    assert load_world(write(tmp_path, "")) == []


@pytest.mark.parametrize("text, words", [
    ("{parent: world}", "expected a YAML list"),
    ("- [world, robot7/map]", "entry 1: expected a mapping"),
    ("- {parent: world}", "entry 1: missing child"),
    ("- {parent: world, child: world}", "parent and child are both"),
    ("- {parent: world, child: a, translation: [1, 2]}", "translation must be a list of 3"),
    ("- {parent: world, child: a, rotation: [0, 0, 0, 2]}", "not a unit quaternion"),
    ("- {parent: world, child: a, rotation: [0, 0, .nan, 1]}", "finite numbers"),
    ("- {parent: world, child: a, colour: red}", "unknown key 'colour'"),
    ("- {parent: world, child: a}\n- {parent: dock, child: a}", "entry 2: child 'a' already"),
    ("- {parent: world, child: a\n", "at line"),
    ("- {parent: '', child: a}", "parent must be a non-empty frame id"),
])
def test_bad_world_files_give_one_line_naming_the_file_and_entry(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(WorldError) as info:
        load_world(path)
    message = str(info.value)
    assert words in message and "\n" not in message and path in message


def test_missing_world_file_is_one_line(tmp_path):
    with pytest.raises(WorldError, match="cannot read world file"):
        load_world(str(tmp_path / "nope.yaml"))


def test_a_cycle_in_a_world_is_one_line_naming_it(tmp_path):
    path = write(tmp_path, "- {parent: world, child: dock}\n- {parent: c, child: a}\n"
                           "- {parent: a, child: b}\n- {parent: b, child: c}\n")
    with pytest.raises(WorldError) as info:
        load_world(path)
    message = str(info.value)
    assert "a cycle" in message and "\n" not in message
    assert all(f in message for f in ("a -> ", "b", "c"))


def test_a_world_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path):
    import os

    fifo = tmp_path / "world.fifo"
    os.mkfifo(fifo)  # nobody writes: reading it would block for ever
    for path in (str(fifo), "/dev/zero", str(tmp_path)):
        with pytest.raises(WorldError) as info:
            load_world(path)
        assert "not a regular file" in str(info.value) or "a folder" in str(info.value)


def test_a_world_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    from tf2py.server.fleet import world

    monkeypatch.setattr(world, "MAX_WORLD_BYTES", 1000)
    path = write(tmp_path, "- {parent: world, child: dock}\n" * 100)
    with pytest.raises(WorldError, match="too large"):
        load_world(path)


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ("- " * 1000 + "x", "nested deeper than 64 levels"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi")), "once its aliases are expanded"),
])
def test_deep_or_exploding_yaml_is_one_line(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(WorldError) as info:
        load_world(path)
    assert words in str(info.value) and "\n" not in str(info.value)

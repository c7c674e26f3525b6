"""Every broken description in the contract's list is one RobotModelError line naming the
file, the line and the element; the XML reader resolves no entity and reads no DTD."""

from __future__ import annotations

import re

import pytest

from tf2py import RobotModel, RobotModelError

LINK = '<link name="{}"/>'
JOINT = ('<joint name="{name}" type="{type}"><parent link="{parent}"/><child link="{child}"/>'
         '{extra}</joint>')


def robot(*lines: str) -> str:
    """A URDF whose ``lines`` start on line 3."""
    return "\n".join(['<?xml version="1.0"?>', '<robot name="r">', *lines, "</robot>"])


def joint(name: str, parent: str, child: str, type: str = "revolute", extra: str = "") -> str:
    return JOINT.format(name=name, type=type, parent=parent, child=child, extra=extra)


def error_of(urdf_file, text: str) -> str:
    """The message of loading ``text`` from a file, checked to be one line naming it."""
    path = urdf_file(text, "broken.urdf")
    with pytest.raises(RobotModelError) as info:
        RobotModel.from_urdf(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:"), message
    return message


def line_of(message: str) -> int:
    match = re.match(r".*?\.urdf:(\d+): ", message)
    assert match, message
    return int(match.group(1))


def test_not_xml_names_the_line(urdf_file):
    message = error_of(urdf_file, robot(LINK.format("a"), '<link name="b">'))
    assert line_of(message) == 5 and "not XML" in message


def test_a_document_without_robot_is_refused(urdf_file):
    message = error_of(urdf_file, '<?xml version="1.0"?>\n<model name="m"/>')
    assert line_of(message) == 2 and "<robot>" in message and "<model>" in message


@pytest.mark.parametrize("kind", ["link", "joint"])
def test_a_name_given_twice_is_refused(urdf_file, kind):
    if kind == "link":
        lines = [LINK.format("a"), LINK.format("b"), LINK.format("a")]
        culprit = 5
    else:
        lines = [LINK.format("a"), LINK.format("b"), LINK.format("c"),
                 joint("j", "a", "b", "fixed"), joint("j", "b", "c", "fixed")]
        culprit = 7
    message = error_of(urdf_file, robot(*lines))
    assert line_of(message) == culprit
    assert f"{kind} 'a'" in message or f"{kind} 'j'" in message
    assert "twice" in message


@pytest.mark.parametrize("end", ["parent", "child"])
def test_a_joint_to_a_missing_link_is_refused(urdf_file, end):
    ends = {"parent": "a", "child": "b", end: "ghost"}
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b"),
                                        joint("j", ends["parent"], ends["child"], "fixed")))
    assert line_of(message) == 5
    assert "joint 'j'" in message and f"{end} link 'ghost' does not exist" in message


def test_a_link_with_two_parents_is_refused(urdf_file):
    message = error_of(urdf_file, robot(
        LINK.format("a"), LINK.format("b"), LINK.format("c"),
        joint("j1", "a", "c", "fixed"), joint("j2", "b", "c", "fixed")))
    assert line_of(message) == 7
    assert "joint 'j2'" in message and "link 'c' has two parents" in message


def test_a_cycle_is_refused(urdf_file):
    message = error_of(urdf_file, robot(
        LINK.format("a"), LINK.format("b"), LINK.format("c"),
        joint("j1", "b", "c", "fixed"), joint("j2", "c", "b", "fixed")))
    assert "cycle" in message and "'j1'" in message and "'j2'" in message
    assert line_of(message) in (6, 7)


def test_links_that_are_all_in_a_cycle_are_a_cycle_without_a_root(urdf_file):
    message = error_of(urdf_file, robot(
        LINK.format("a"), LINK.format("b"),
        joint("j1", "a", "b", "fixed"), joint("j2", "b", "a", "fixed")))
    assert "form a cycle, so no link is the root" in message and line_of(message) in (5, 6)
    with_root = error_of(urdf_file, robot(
        LINK.format("r"), LINK.format("a"), LINK.format("b"),
        joint("j1", "a", "b", "fixed"), joint("j2", "b", "a", "fixed")))
    assert with_root.endswith("form a cycle")


def test_a_joint_from_a_link_to_itself_is_a_cycle(urdf_file):
    message = error_of(urdf_file, robot(LINK.format("a"), joint("j", "a", "a", "fixed")))
    assert line_of(message) == 4 and "joint 'j'" in message and "cycle" in message


def test_no_root_is_refused(urdf_file):
    message = error_of(urdf_file, robot())
    assert line_of(message) == 2 and "no root link" in message


def test_several_roots_are_refused(urdf_file):
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b")))
    assert line_of(message) == 4
    assert "several root links" in message and "'a'" in message and "'b'" in message


def test_an_unknown_joint_type_is_refused(urdf_file):
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b"),
                                        joint("j", "a", "b", "ball")))
    assert line_of(message) == 5 and "joint 'j'" in message and "'ball'" in message


@pytest.mark.parametrize("type", ["revolute", "continuous", "prismatic"])
@pytest.mark.parametrize("axis", ['<axis xyz="0 0 0"/>', "<axis/>"])
def test_a_zero_axis_on_a_moving_joint_is_refused(urdf_file, type, axis):
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b"),
                                        joint("j", "a", "b", type, axis)))
    assert line_of(message) == 5 and "joint 'j'" in message and "zero axis" in message


def test_a_zero_axis_on_a_fixed_joint_is_ignored():
    model = RobotModel.from_urdf_string(robot(
        LINK.format("a"), LINK.format("b"), joint("j", "a", "b", "fixed", '<axis xyz="0 0 0"/>')))
    assert model.joints[0].axis.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("extra", [
    '<origin xyz="nan 0 0"/>', '<origin xyz="0 inf 0"/>', '<origin rpy="0 0 1e999"/>',
    '<origin xyz="0 0 abc"/>', '<axis xyz="0 0 NaN"/>', '<limit lower="-inf" upper="1" '
    'effort="1" velocity="1"/>', '<limit lower="0" upper="1" effort="nan" velocity="1"/>',
    # what kinematics does not use, but urdfdom refuses the model for
    '<dynamics damping="0.1" friction="inf"/>', '<dynamics damping="nan"/>',
    '<safety_controller soft_lower_limit="nan" k_velocity="1"/>',
    '<safety_controller k_position="1" k_velocity="-inf"/>', '<calibration rising="nan"/>',
    '<calibration falling="x"/>',
])
def test_a_number_that_is_not_finite_is_refused(urdf_file, extra):
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b"),
                                        joint("j", "a", "b", "revolute", extra)))
    assert line_of(message) == 5 and "joint 'j'" in message and "not a finite number" in message


def test_a_vector_of_the_wrong_length_is_refused(urdf_file):
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b"),
                                        joint("j", "a", "b", "fixed", '<origin xyz="1 2"/>')))
    assert line_of(message) == 5 and "needs 3 numbers" in message


def test_a_mimic_of_a_nonfinite_multiplier_is_refused(urdf_file):
    message = error_of(urdf_file, robot(
        LINK.format("a"), LINK.format("b"), LINK.format("c"), joint("j1", "a", "b"),
        joint("j2", "b", "c", extra='<mimic joint="j1" multiplier="inf"/>')))
    assert line_of(message) == 7 and "joint 'j2'" in message


def test_a_mimic_cycle_is_refused(urdf_file):
    message = error_of(urdf_file, robot(
        LINK.format("a"), LINK.format("b"), LINK.format("c"),
        joint("j1", "a", "b", extra='<mimic joint="j2"/>'),
        joint("j2", "b", "c", extra='<mimic joint="j1"/>')))
    assert "mimic cycle" in message and "'j1'" in message and "'j2'" in message
    assert line_of(message) == 6


def test_a_mimic_of_itself_is_a_cycle(urdf_file):
    message = error_of(urdf_file, robot(LINK.format("a"), LINK.format("b"),
                                        joint("j", "a", "b", extra='<mimic joint="j"/>')))
    assert "mimic cycle" in message and line_of(message) == 5


def test_text_errors_name_the_string():
    with pytest.raises(RobotModelError, match=r"^<string>:4: joint 'j': unknown joint type"):
        RobotModel.from_urdf_string(robot(LINK.format("a"), joint("j", "a", "b", "hinge")))


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(RobotModelError, match="cannot be read") as info:
        RobotModel.from_urdf(tmp_path / "absent.urdf")
    assert "\n" not in str(info.value) and "absent.urdf" in str(info.value)


def test_the_error_is_a_value_error():
    with pytest.raises(ValueError):
        RobotModel.from_urdf_string("not xml at all")


# -- entities and DTDs: nothing is expanded, nothing outside the text is read -------------

BOMB = """<?xml version="1.0"?>
<!DOCTYPE robot [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<robot name="&d;"><link name="a"/></robot>
"""


def test_an_entity_bomb_is_refused_at_its_first_declaration(urdf_file):
    message = error_of(urdf_file, BOMB)
    assert line_of(message) == 3 and "entity 'a'" in message


def test_an_external_entity_is_never_read(urdf_file, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT")
    text = (f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY s SYSTEM "file://{secret}">]>\n'
            '<robot name="r"><link name="&s;"/></robot>')
    message = error_of(urdf_file, text)
    assert "SECRET" not in message and "entity 's'" in message


def test_an_external_dtd_is_refused(urdf_file, tmp_path):
    dtd = tmp_path / "robot.dtd"
    dtd.write_text('<!ENTITY x "from the dtd">')
    text = (f'<?xml version="1.0"?>\n<!DOCTYPE robot SYSTEM "file://{dtd}">\n'
            '<robot name="r"><link name="&x;"/></robot>')
    message = error_of(urdf_file, text)
    assert line_of(message) == 2 and "external DTD" in message


def test_an_undeclared_entity_is_not_xml(urdf_file):
    message = error_of(urdf_file, robot('<link name="&undefined;"/>'))
    assert line_of(message) == 3 and "not XML" in message


def test_a_plain_doctype_loads():
    model = RobotModel.from_urdf_string('<?xml version="1.0"?>\n<!DOCTYPE robot>\n'
                                        '<robot name="r"><link name="a"/></robot>')
    assert model.links == ["a"]


@pytest.mark.parametrize("body", [
    '<visual><origin xyz="0 nan 0"/><geometry><box size="1 1 1"/></geometry></visual>',
    '<inertial><mass value="inf"/></inertial>',
    '<inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1e999" iyz="0" izz="1"/></inertial>',
    '<collision><geometry><mesh filename="package://x/y.stl" scale="1 1"/></geometry></collision>',
])
def test_a_bad_number_inside_a_link_is_refused_as_urdfdom_does(urdf_file, body):
    message = error_of(urdf_file, robot(LINK.format("a"), f'<link name="b">{body}</link>',
                                        joint("j", "a", "b", "fixed")))
    assert line_of(message) == 4 and "link 'b'" in message


def test_mesh_uris_are_kept_as_text_and_never_opened(tmp_path):
    model = RobotModel.from_urdf_string(robot(
        '<link name="a"><visual><geometry><mesh filename="package://nowhere/m.dae"/></geometry>'
        '</visual></link>', '<link name="b"><visual><geometry>'
        f'<mesh filename="file://{tmp_path}/absent.stl" scale="1 2 3"/></geometry></visual></link>',
        joint("j", "a", "b", "fixed")))
    assert "package://nowhere/m.dae" in model.urdf and model.links == ["a", "b"]


SMALL = """<?xml version="1.0"?>
<robot name="small">
  <link name="base"/><link name="upper"/><link name="tool"/><link name="finger"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0.1 -0.2 0.3"/><axis xyz="0 1 1"/>
    <limit lower="-1" upper="1" velocity="1" effort="1"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="upper"/><child link="tool"/><axis xyz="1 0 0"/>
  </joint>
  <joint name="grip" type="continuous">
    <parent link="tool"/><child link="finger"/><mimic joint="shoulder" multiplier="2" offset="0.1"/>
  </joint>
</robot>
"""


def test_mangled_descriptions_load_or_raise_one_error_line():
    """300 deterministic mutations of a valid URDF (a character or a line removed, a line
    repeated, an attribute's value replaced by junk): each loads (and computes) or raises a
    one-line RobotModelError; no other exception escapes."""
    import random
    import warnings

    rng = random.Random(25)
    junk = ["", "nan", "1e999", "x", "0 0", "1 2 3 4", "&amp;", "<", "é", "0x10", "1_0", " ",
            "revolute", "fixed", "ghost", "base", "shoulder"]
    lines = SMALL.splitlines()
    values = [m.span(1) for m in re.finditer(r'="([^"]*)"', SMALL)]
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(300):
        kind = rng.randrange(4)
        if kind == 0:
            at = rng.randrange(len(SMALL))
            text = SMALL[:at] + SMALL[at + 1:]
        elif kind == 1:
            mutated = list(lines)
            mutated.insert(rng.randrange(len(mutated)), rng.choice(lines))
            text = "\n".join(mutated)
        elif kind == 2:
            start, end = rng.choice(values)
            text = SMALL[:start] + rng.choice(junk) + SMALL[end:]
        else:
            mutated = list(lines)
            del mutated[rng.randrange(len(mutated))]
            text = "\n".join(mutated)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = RobotModel.from_urdf_string(text)
            model.forward_kinematics([0.1] * len(model.joint_names))
            model.transforms([0.1] * len(model.joint_names))
            outcomes["loaded"] += 1
        except RobotModelError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("<string>")
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 10 and outcomes["refused"] > 10, outcomes

"""xacro files through ``RobotModel.from_urdf``: expanded by the xacro package with
``name:=value`` arguments, errors as one RobotModelError line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tf2py import RobotModel, RobotModelError

pytest.importorskip("xacro")

ARM = """<?xml version="1.0"?>
<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="height" default="0.5"/>
  <xacro:property name="reach" value="0.25"/>
  <xacro:macro name="segment" params="index parent">
    <link name="link${index}"/>
    <joint name="joint${index}" type="revolute">
      <parent link="${parent}"/><child link="link${index}"/>
      <origin xyz="${reach} 0 $(arg height)"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" velocity="1" effort="1"/>
    </joint>
  </xacro:macro>
  <link name="base"/>
  <xacro:segment index="1" parent="base"/>
  <xacro:segment index="2" parent="link1"/>
</robot>
"""


def test_a_xacro_file_is_expanded_with_its_defaults(urdf_file):
    model = RobotModel.from_urdf(urdf_file(ARM, "arm.urdf.xacro"))
    assert model.name == "arm" and model.joint_names == ["joint1", "joint2"]
    poses = model.forward_kinematics([0.0, 0.0])
    assert np.allclose(poses[-1][:3, 3], (0.5, 0.0, 1.0))
    assert "xacro" not in model.urdf.split("?>", 1)[-1].split("-->")[-1].lower()  # expanded
    assert RobotModel.from_urdf_string(model.urdf).links == model.links


def test_xacro_args_are_name_value_mappings(urdf_file):
    model = RobotModel.from_urdf(urdf_file(ARM, "arm.xacro"), xacro_args={"height": 2})
    assert np.allclose(model.forward_kinematics([0.0, 0.0])[-1][:3, 3], (0.5, 0.0, 4.0))


def test_a_xacro_error_is_one_line_naming_the_file(urdf_file):
    path = urdf_file(ARM.replace('parent="link1"', 'parent="link1" undefined="${nothing}"'),
                     "broken.urdf.xacro")
    with pytest.raises(RobotModelError) as info:
        RobotModel.from_urdf(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "xacro" in message


def test_a_xacro_that_expands_to_a_broken_urdf_names_the_file(urdf_file):
    path = urdf_file(ARM.replace('parent="link1"', 'parent="ghost"'), "ghost.urdf.xacro")
    with pytest.raises(RobotModelError, match="does not exist") as info:
        RobotModel.from_urdf(path)
    assert str(path) in str(info.value) and "joint 'joint2'" in str(info.value)


def test_a_xacro_with_an_entity_is_refused_before_xacro_reads_it(urdf_file):
    text = ARM.replace('<?xml version="1.0"?>', '<?xml version="1.0"?>\n<!DOCTYPE robot '
                       '[<!ENTITY a "aaaa">]>')
    with pytest.raises(RobotModelError, match="entity 'a'"):
        RobotModel.from_urdf(urdf_file(text, "entity.urdf.xacro"))


def test_the_published_hector_xacro_through_from_urdf(urdf_file, published):
    """example-robot-data's quadrotor_base.urdf.xacro defines a macro; a file that includes
    it and calls it (as its quadrotor_base.xacro means to, through a package:// path that
    needs ROS) gives the published quadrotor_base.urdf's robot."""
    library = published[("hector_description", "quadrotor_base.urdf.xacro")]
    wrapper = urdf_file(
        '<?xml version="1.0"?>\n<robot name="$(arg name)" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
        '  <xacro:arg name="name" default="hector"/>\n'
        f'  <xacro:include filename="{library}"/>\n'
        "  <xacro:quadrotor_base_macro/>\n</robot>\n", "hector.urdf.xacro")
    with pytest.warns(UserWarning, match="redefining global symbol: pi"):  # xacro's, one line
        model = RobotModel.from_urdf(wrapper, xacro_args={"name": "quadrotor"})
    published = RobotModel.from_urdf(published[("hector_description", "quadrotor_base.urdf")])
    assert model.name == "quadrotor" and model.links == published.links == ["base_link"]
    assert np.array_equal(model.forward_kinematics([]), published.forward_kinematics([]))


def test_the_published_top_level_hector_xacro_is_one_error_line(published):
    """Its include names a package:// path (ROS's package index) to a file the package does
    not hold there: one RobotModelError line, nothing else."""
    path = published[("hector_description", "quadrotor_base.xacro")]
    with pytest.raises(RobotModelError) as info:
        RobotModel.from_urdf(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_without_the_xacro_package_the_error_says_what_to_install(urdf_file):
    path = urdf_file(ARM, "arm.urdf.xacro")
    script = (
        "import sys; sys.modules['xacro'] = None\n"
        "from tf2py import RobotModel, RobotModelError\n"
        "try:\n"
        f"    RobotModel.from_urdf({str(path)!r})\n"
        "except RobotModelError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pip install 'tf2py[robot]'" in done.stdout and str(path) in done.stdout


def test_xacro_args_on_a_plain_urdf_are_refused(urdf_file):
    path = urdf_file('<robot name="r"><link name="a"/></robot>')
    with pytest.raises(RobotModelError, match="not .xacro"):
        RobotModel.from_urdf(path, xacro_args={"x": 1})


def test_what_xacro_prints_as_a_warning_is_one_model_warning_line(urdf_file, capfd):
    from tf2py.robot import RobotModelWarning

    path = urdf_file(ARM.replace('<link name="base"/>',
                                 '<xacro:property name="pi" value="3"/><link name="base"/>'),
                     "pi.urdf.xacro")
    with pytest.warns(RobotModelWarning) as caught:
        model = RobotModel.from_urdf(path)
    assert model.joint_names == ["joint1", "joint2"]
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(f"{path}: xacro: ") and "pi" in message and "\n" not in message
    assert capfd.readouterr().err == ""  # not xacro's own lines on stderr

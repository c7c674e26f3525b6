"""The DDS types of the ROS 2 messages tf2py uses, named as ROS 2 names them
(``pkg::msg::dds_::Name_``). Samples travel as raw CDR (see ``cdr``); these classes give the
DDS type names and shapes that discovery matches on."""


from dataclasses import dataclass

from ._dds import dds  # noqa: F401  (the extra's check first: its one-line ImportError)

# isort: split
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, bounded_str, float64, int32, sequence, uint8, uint32

__all__ = ["Time", "TFMessage", "Clock", "ParticipantEntitiesInfo", "JointState", "String",
           "BY_ROS_TYPE"]


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time
    frame_id: str


@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64
    y: float64
    z: float64


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64
    y: float64
    z: float64
    w: float64


@dataclass
class Transform(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3
    rotation: Quaternion


@dataclass
class TransformStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header
    child_frame_id: str
    transform: Transform


@dataclass
class TFMessage(IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: sequence[TransformStamped]


@dataclass
class Clock(IdlStruct, typename="rosgraph_msgs::msg::dds_::Clock_"):
    clock: Time


@dataclass
class JointState(IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
    header: Header
    name: sequence[str]
    position: sequence[float64]
    velocity: sequence[float64]
    effort: sequence[float64]


@dataclass
class String(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str


@dataclass
class Gid(IdlStruct, typename="rmw_dds_common::msg::dds_::Gid_"):
    data: array[uint8, 16]


@dataclass
class NodeEntitiesInfo(IdlStruct, typename="rmw_dds_common::msg::dds_::NodeEntitiesInfo_"):
    node_namespace: bounded_str[256]
    node_name: bounded_str[256]
    reader_gid_seq: sequence[Gid]
    writer_gid_seq: sequence[Gid]


@dataclass
class ParticipantEntitiesInfo(IdlStruct,
                              typename="rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"):
    gid: Gid
    node_entities_info_seq: sequence[NodeEntitiesInfo]


#: The DDS type of each ROS 2 message type that typed topics (``topics.TopicSpec``) carry.
BY_ROS_TYPE: dict[str, type[IdlStruct]] = {
    "tf2_msgs/msg/TFMessage": TFMessage,
    "rosgraph_msgs/msg/Clock": Clock,
    "sensor_msgs/msg/JointState": JointState,
    "std_msgs/msg/String": String,
}

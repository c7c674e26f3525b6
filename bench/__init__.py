"""tf2py's benchmarks, one module each, run as ``python -m bench NAME [--quick] [--json FILE]``
at the repository root (``python -m bench --list`` names them). ``bench.harness`` is their one
harness; ``python -m bench report`` writes the tables of docs/performance.md from the JSON in
bench/results/. Simulated peers shared with the tests live in ``simulators/``."""

from __future__ import annotations

# name -> what it measures (one line). The module is bench/<name>.py.
BENCHMARKS: dict[str, str] = {
    "kernel": "store: tf2py vs transform-tree, lookups, batches, inserts, Buffer/BufferCore, memory",
    "listener_floor": "listener CPU per transform vs a raw pyzmq + msgpack floor",
    "call_instructions": "store calls, instructions per call under callgrind, before and after",
    "insert_instructions": "store inserts, instructions per row under callgrind",
    "buffer": "store vs pytransform3d",
    "buffer_threaded": "thread-safe Buffer: lock, waits, async",
    "transport": "bus: broadcasters -> core -> listener (ingest, latency, fan-out, floor)",
    "server": "buffer server: throughput and latency of lookups",
    "faults": "buffer server and tool faults (issue 11)",
    "faults_bus": "bus faults and keys (issue 11)",
    "bag": "bag loading vs the library's bare read",
    "bag_robot": "bag.load(robot=...) of joint states vs loading the same /tf",
    "cli": "command line: start-up and CPU of tf2py commands",
    "ros2": "ROS 2: tf2py vs rclpy, CPU per transform",
    "fleet": "fleet over Zenoh: ingest, loss, CPU, lookup latency",
    "fleet_split": "two fleets on one address against one holding all",
    "fleet_attacks": "fleet under attack: floods, garbage, joins",
    "fleet_answers": "fleet: answers while ingesting",
    "zenoh_bus": "zenoh:// vs ros2:// and tcp://",
    "foxglove_view": "live view: tf2py foxglove forwarding to a WebSocket client",
    "times": "velocity, message filter, /clock",
    "velocity": "lookup_velocity vs lookup_transform",
    "robot_state_publisher": "RobotStatePublisher: 32-joint humanoid at 500 Hz",
    "robot_fk": "forward kinematics vs pinocchio, Panda x 10 000",
}

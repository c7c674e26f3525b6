"""Simulated peers shared by tf2py's tests and benchmarks (not part of the wheel).

Tests import this package through pytest's ``pythonpath`` (the repository root); benchmarks
through ``python -m bench`` run at the repository root. Tests and benchmarks import it, never
each other.

- ``fleet_robots``: simulated ROS 2 robots on rmw_zenoh's wire (a script, one process plays
  many robots).
- ``bus_processes``: broadcaster, raw pyzmq publisher and fan-out listener processes of the
  bus benchmarks, as scripts.
- ``forging_server``: a stranger posing as a buffer server, answering every goal with a
  forged transform.
- ``joints``: random joint configurations within a robot model's limits.
"""

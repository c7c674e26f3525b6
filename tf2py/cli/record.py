"""``tf2py record OUT.mcap``: write what is on the bus into a ROS 2 MCAP file.

Every message on ``/tf`` and ``/tf_static`` becomes one ``tf2_msgs/msg/TFMessage`` (CDR) on
the topic of the same name, logged at the time it was received, so ``ros2 bag``, the
``mcap`` tools, Foxglove and ``tf2py play`` / ``tf2py.bag.load`` read it back. Ctrl-C,
SIGTERM or the end of ``--duration`` close the file properly (summary and footer written).

With ``--foxglove`` (needs ``pip install 'tf2py[viz]'``) every message is also written as one
``foxglove.FrameTransforms`` (protobuf, schema embedded) on ``/tf_foxglove`` (from ``/tf``)
and ``/tf_static_foxglove`` (from ``/tf_static``), so Foxglove shows the recording in 3D
without ROS message definitions; the ROS topics are unchanged.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Any

from .common import CommandError, bus_name, flag_number, no_data_hint, parse_core_argument

NAME = "record"
HELP = "record /tf and /tf_static from the bus into a ROS 2 MCAP file"

#: The topics of ``--foxglove``, by is_static.
FOXGLOVE_TOPICS = {False: "/tf_foxglove", True: "/tf_static_foxglove"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("output", metavar="OUT.mcap", help="the MCAP file to write")
    parser.add_argument("--duration", metavar="S", default=None,
                        help="stop after S seconds (default: until Ctrl-C or SIGTERM)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite OUT.mcap if it exists")
    parser.add_argument("--foxglove", action="store_true",
                        help="also write the tree as foxglove.FrameTransforms (protobuf) on "
                        f"{FOXGLOVE_TOPICS[False]} and {FOXGLOVE_TOPICS[True]}, for Foxglove's "
                        "3D view without ROS definitions (needs pip install 'tf2py[viz]')")
    parse_core_argument(parser)


class _Recorder:
    """Writes each received batch into the bag; a failing batch is counted, never fatal.

    A ``/tf_static`` message that repeats, row for row, what its publisher's statics already
    recorded is left out (``repeated_statics``): the bus hands a publisher's latched set again
    to every subscriber that joins (a bag played into the bus, a listener starting), and
    rosbag2 records a transient-local publisher's message once too."""

    def __init__(self, writer: Any, foxglove: Any = None) -> None:
        self.writer = writer
        self.failed = 0
        self.foxglove_left_out = 0
        self._failure_causes: set[str] = set()
        self._lock = threading.Lock()
        # (FrameTransformsBuilder, {is_static: channel id}) with --foxglove
        self._foxglove = foxglove
        # authority -> child -> (parent, stamp ns, values) of the statics recorded
        self._statics: dict[str, dict[str, tuple[str, int, bytes]]] = {}
        self.repeated_statics = 0

    def _repeats_statics(self, authority: str, transforms: Any) -> bool:
        """Whether every row of a /tf_static message (a ``Transforms``) was recorded from
        ``authority`` already; remembers its rows when not."""
        recorded = self._statics.setdefault(authority, {})
        rows = [(child, (parent, int(stamp), values.tobytes())) for parent, child, stamp, values
                in zip(transforms.parents, transforms.children, transforms.stamps_ns,
                       transforms.values)]
        if rows and all(recorded.get(child) == row for child, row in rows):
            return True
        recorded.update(rows)
        return False

    def on_batch(self, batch: Any) -> None:
        try:
            rows = batch.transforms
            if batch.is_static and self._repeats_statics(batch.authority, rows):
                self.repeated_statics += 1
                return
            self.writer.write_columns(rows.parents, rows.children, rows.stamps_ns, rows.values,
                                      bool(batch.is_static), batch.received_ns)
            if self._foxglove is not None:
                self._write_foxglove(batch)
        except Exception as exc:  # a closed writer or an unencodable stamp
            self._failure(type(exc).__name__, f"dropped a message: {exc}")

    def _write_foxglove(self, batch: Any) -> None:
        builder, channels = self._foxglove
        rows = batch.transforms
        data, left_out = builder.encode(rows.parents, rows.children, rows.stamps_ns, rows.values)
        for cause, detail, count in left_out or ():
            with self._lock:
                self.foxglove_left_out += count
            self._failure(f"foxglove-{cause}",
                          f"left {count} transform(s) out of {FOXGLOVE_TOPICS[False]}: {detail}",
                          count_failed=False)
        if data is not None:
            self.writer.write_message(channels[bool(batch.is_static)], data, batch.received_ns)

    def _failure(self, cause: str, message: str, count_failed: bool = True) -> None:
        with self._lock:
            if count_failed:
                self.failed += 1
            if cause in self._failure_causes:
                return
            self._failure_causes.add(cause)
        print(f"tf2py record: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    duration = None
    if args.duration is not None:
        duration = flag_number(args.duration, "--duration", "seconds")
    if os.path.isdir(args.output):
        raise CommandError(f"{args.output} is a folder; give the path of an .mcap file")
    if os.path.exists(args.output) and not args.force:
        raise CommandError(f"{args.output} exists; use --force to overwrite it")

    foxglove_builder: Any = None
    if args.foxglove:
        from ..viz.errors import VizDependencyError

        try:
            from ..viz import frame_transforms

            builder_module: Any = frame_transforms  # (untyped)
            foxglove_builder = builder_module.FrameTransformsBuilder()
        except VizDependencyError as exc:
            raise CommandError(str(exc)) from None

    from ..bag import BagError, BagWriter
    from ..transport.address import core_address
    from ..transport.interface import check_core_address
    from ..transport.listener import TransformSubscriber

    try:
        check_core_address(args.core)  # a malformed address: refused before the file is created
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None
    try:
        writer = BagWriter(args.output)
    except BagError as exc:
        raise CommandError(str(exc)) from None
    foxglove = None
    if foxglove_builder is not None:
        try:
            schema = foxglove_builder.schema()
            foxglove = (foxglove_builder, {
                is_static: writer.add_channel(topic, schema.name, schema.encoding,
                                              schema.data, "protobuf")
                for is_static, topic in FOXGLOVE_TOPICS.items()})
        except BaseException:
            writer.close()
            raise
    recorder = _Recorder(writer, foxglove)
    subscriber = None
    try:
        subscriber = TransformSubscriber(core=args.core, on_batch=recorder.on_batch)
        print(f"tf2py record: recording to {args.output} from {core_address(args.core)}",
              flush=True)
        deadline = None if duration is None else time.monotonic() + duration
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        # A second Ctrl-C must not cut the file short: finish it with the signals held off.
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            if subscriber is not None:
                subscriber.close()
            writer.close()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    print(
        f"tf2py record: wrote {writer.transform_count} transforms in {writer.message_count} "
        f"messages to {args.output}"
        + (f" ({recorder.failed} messages dropped)" if recorder.failed else ""),
        flush=True,
    )
    if writer.message_count == 0 and not recorder.failed:
        print(f"tf2py record: nothing was received from {bus_name(args.core)} "
              f"({no_data_hint(args.core)})",
              file=sys.stderr, flush=True)
    return 0

"""``tf2py view-frames``: listen to the bus, then draw the frame tree as tf2's ``view_frames``
does: NAME.gv with tf2's edge labels, rendered to NAME.pdf and NAME.svg by Graphviz's dot."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from .common import CommandError, parse_core_argument
from .frames import add_wait_time_argument, listen, wait_time_of

NAME = "view-frames"
HELP = "draw the frame tree to NAME.gv, NAME.pdf and NAME.svg, as tf2's view_frames does"

INSTALL_GRAPHVIZ = (
    "install Graphviz to get the pictures (Debian/Ubuntu: sudo apt-get install graphviz; "
    "Fedora: sudo dnf install graphviz; macOS: brew install graphviz; conda: conda install "
    "graphviz), then run: dot -Tpdf {gv} -o {name}.pdf"
)


def configure(parser) -> None:
    parser.add_argument("-o", "--output", metavar="NAME", default=None,
                        help="file name without extension (default: frames_<date>_<time>, "
                        "as tf2's view_frames)")
    add_wait_time_argument(parser, 5.0)
    parse_core_argument(parser)


def _quoted(text) -> str:
    """Text for inside a dot string: tf2 writes names as they are, which breaks the file for
    a frame or broadcaster name holding a quote or a backslash; those are escaped."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def generate_dot(data: dict, recorded_time: float) -> str:
    """The Graphviz text of tf2's view_frames for the parsed ``all_frames_as_yaml()``."""
    if not data:
        return 'digraph G { "No tf data received" }'
    dot = "digraph G {\n"
    root = None
    for child, entry in data.items():
        dot += f'"{_quoted(entry["parent"])}" -> "{_quoted(child)}"'
        dot += '[label=" '
        dot += f"Broadcaster: {_quoted(entry['broadcaster'])}\\n"
        dot += f"Average rate: {entry['rate']}\\n"
        dot += f"Buffer length: {entry['buffer_length']}\\n"
        dot += f"Most recent transform: {entry['most_recent_transform']}\\n"
        dot += f"Oldest transform: {entry['oldest_transform']}\\n"
        dot += '"];\n'
        if entry["parent"] not in data:
            root = entry["parent"]
    if root is None:  # every parent is also a child: a loop; anchor the legend anywhere
        root = next(iter(data))
    dot += "edge [style=invis];\n"
    dot += ' subgraph cluster_legend { style=bold; color=black; label ="view_frames Result";\n'
    dot += f'"Recorded at time: {recorded_time}"[ shape=plaintext ] ;\n'
    dot += f'}}->"{_quoted(root)}";\n}}'
    return dot


def view_frames_data(buffer) -> dict:
    """The data tf2's view_frames reads back from the buffer's YAML report, per child frame:
    parent, broadcaster, and the report's numbers re-printed as Python floats (``Average
    rate: 10000.0``). Built from ``frames_info()`` with the report's rounding rather than by
    parsing the YAML, whose keys are frame names written unquoted (as tf2 writes them), so
    that a name such as ``a: b``, ``yes`` or ``123`` cannot break or retype the picture."""
    from ..buffer.time import format_seconds

    return {
        child: {
            "parent": entry["parent"],
            "broadcaster": entry["broadcaster"],
            "rate": float("%.3f" % entry["rate"]),
            "most_recent_transform": float(format_seconds(entry["most_recent_ns"])),
            "oldest_transform": float(format_seconds(entry["oldest_ns"])),
            "buffer_length": float("%.3f" % entry["buffer_seconds"]),
        }
        for child, entry in buffer.frames_info().items()
    }


def render(gv_path: str, name: str) -> list[str]:
    """Render the .gv with dot to NAME.pdf and NAME.svg; the files written."""
    dot = shutil.which("dot")
    written = []
    for fmt in ("pdf", "svg"):
        out = f"{name}.{fmt}"
        try:
            result = subprocess.run([dot, f"-T{fmt}", gv_path, "-o", out],
                                    capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CommandError(f"running dot to write {out} failed: {exc}") from None
        if result.returncode != 0:
            raise CommandError(
                f"dot failed to write {out} (exit {result.returncode}): "
                f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ''}"
            )
        written.append(out)
    return written


def _core_listening(core) -> bool:
    """Whether something accepts connections at the core's address (tcp:// only; other
    schemes are given the benefit of the doubt)."""
    import socket

    from ..transport.address import bus_endpoints

    try:
        endpoint = bus_endpoints(core)[0]
    except ValueError:
        return True
    host, port = endpoint[len("tcp://"):].rsplit(":", 1)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=2.0):
            return True
    except OSError:
        return False


def run(args) -> int:
    from ..buffer.time import Time
    from ..transport.address import core_address

    wait_time = wait_time_of(args)
    name = args.output or time.strftime("frames_%Y-%m-%d_%H.%M.%S")
    for suffix in (".gv", ".pdf", ".svg"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    where = core_address(args.core)
    print(f"Listening to tf data on {where} during {wait_time:g} seconds...", flush=True)
    buffer = listen(args.core, wait_time)
    data = view_frames_data(buffer)
    if not data and not _core_listening(args.core):
        # As `frames` and `monitor`: no core at all is an error, not an empty picture. (A core
        # with nothing on it gets tf2's "No tf data received" picture, as view_frames draws.)
        raise CommandError(f"no core answered at {where} (is `tf2py core` running there?)")
    now = Time.now()
    dot = generate_dot(data, now.sec + now.nanosec / 1e9)
    if not data:
        print(f"No tf data received from {where} (is anything broadcasting?)",
              file=sys.stderr, flush=True)
    gv_path = f"{name}.gv"
    try:
        with open(gv_path, "w", encoding="utf-8") as f:
            f.write(dot)
    except OSError as exc:
        raise CommandError(f"cannot write {gv_path}: {exc.strerror}") from None
    if shutil.which("dot") is None:
        print(f"Wrote {gv_path}. Graphviz's dot is not on PATH, so no PDF or SVG was made: "
              + INSTALL_GRAPHVIZ.format(gv=gv_path, name=name), flush=True)
        return 0
    written = render(gv_path, name)
    print(f"Wrote {gv_path}, {', '.join(written)}", flush=True)
    return 0

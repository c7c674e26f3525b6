"""``tf2py view-frames``: listen to the bus (or read a bag with ``--from-bag``), then draw the
frame tree: NAME.gv, rendered to NAME.pdf and NAME.svg by Graphviz's dot.

The drawing is made to be read at the size of a real robot: left to right, static edges dashed
and unlabelled, dynamic edges with their average rate and age, long frame names on two lines;
the 34 frames of a TurtleBot 4 fit one A4 landscape page at 10 pt. The .gv keeps all of tf2's
information for programs that parse it: each edge's ``tooltip`` holds tf2's label text
(``Broadcaster:``, ``Average rate:``, ``Buffer length:``, ``Most recent transform:``,
``Oldest transform:``, same format), and ``--classic`` writes tf2's own layout instead.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from typing import Any

from .common import CommandError, no_data_hint, parse_core_argument
from .frames import add_wait_time_argument, listen, wait_time_of

NAME = "view-frames"
HELP = ("draw the frame tree (of the bus, or of a bag with --from-bag) to NAME.gv, NAME.pdf and "
        "NAME.svg, as tf2's view_frames does, readable at the size of a real robot")

INSTALL_GRAPHVIZ = (
    "install Graphviz to get the pictures (Debian/Ubuntu: sudo apt-get install graphviz; "
    "Fedora: sudo dnf install graphviz; macOS: brew install graphviz; conda: conda install "
    "graphviz), then run: dot -Tpdf {gv} -o {name}.pdf"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="NAME", default=None,
                        help="file name without extension (default: frames_<date>_<time>, "
                        "as tf2's view_frames)")
    add_wait_time_argument(parser, 5.0)
    parser.add_argument("--from-bag", metavar="BAG", default=None,
                        help="draw the tree of a bag (MCAP, ROS 2 folder or ROS 1 .bag) instead "
                        "of listening to the bus; rates are over the whole recording, ages "
                        "at its end")
    parser.add_argument("--classic", action="store_true",
                        help="tf2's own layout: every edge labelled with its five lines "
                        "(unreadable past a dozen frames)")
    parse_core_argument(parser)


def _quoted(text: str) -> str:
    """Text for inside a dot string: tf2 writes names as they are, which breaks the file for
    a frame or broadcaster name holding a quote or a backslash; those are escaped."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def generate_dot(data: dict[str, Any], recorded_time: float) -> str:
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


#: Frame names longer than this are drawn on two lines, broken at an underscore.
WRAP_NAME_AT = 17
#: Edge colours by broadcaster when there are several (the legend names them).
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
            "#17becf", "#bcbd22", "#7f7f7f"]


def _html(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _drawn_name(name: str) -> str:
    """The node label: the frame id, on two lines (broken at the underscore nearest the
    middle) when it is long, so deep trees of long names fit a page."""
    if len(name) <= WRAP_NAME_AT:
        return _quoted(name)
    cuts = [i for i, c in enumerate(name) if c == "_" and 0 < i < len(name) - 1]
    if not cuts:
        return _quoted(name)
    cut = min(cuts, key=lambda i: abs(i + 1 - len(name) / 2))
    return _quoted(name[: cut + 1]) + "\\n" + _quoted(name[cut + 1:])


def tf2_edge_text(entry: dict[str, Any]) -> str:
    """tf2 view_frames' edge label text (dot-escaped) for one ``view_frames_data`` entry."""
    return (f"Broadcaster: {_quoted(entry['broadcaster'])}\\n"
            f"Average rate: {entry['rate']}\\n"
            f"Buffer length: {entry['buffer_length']}\\n"
            f"Most recent transform: {entry['most_recent_transform']}\\n"
            f"Oldest transform: {entry['oldest_transform']}\\n")


def _values_text(values: Any) -> str:
    if values is None:
        return ""
    tx, ty, tz, qx, qy, qz, qw = values
    return (f"translation: ({tx:.6g}, {ty:.6g}, {tz:.6g})\\n"
            f"rotation (x, y, z, w): ({qx:.6g}, {qy:.6g}, {qz:.6g}, {qw:.6g})\\n")


def generate_readable_dot(data: dict[str, Any], info: dict[str, Any], recorded_time: float,
                          now_ns: int, values: dict[str, Any] | None = None) -> str:
    """The Graphviz text of the readable picture: left to right, one box per frame; static
    edges dashed and unlabelled, dynamic edges solid with their average rate and the time
    since their latest transform (at ``now_ns``); edges coloured by broadcaster when there
    are several. Every edge keeps tf2's full label text (``Broadcaster:``, ``Average
    rate:``, ...) in its ``tooltip`` (shown on hover in the SVG), followed by the latest
    values from ``values`` (child -> (tx, ty, tz, qx, qy, qz, qw)). ``data`` is
    ``view_frames_data(buffer)``, ``info`` is ``buffer.frames_info()``."""
    if not data:
        return 'digraph G { "No tf data received" }'
    values = values or {}
    broadcasters = sorted({entry["broadcaster"] for entry in data.values()})
    colour = ({b: _PALETTE[i % len(_PALETTE)] for i, b in enumerate(broadcasters)}
              if len(broadcasters) > 1 else {})
    lines = [
        "digraph G {",
        "// tf2py view-frames: tf2's edge label text is in each edge's tooltip.",
        'graph [rankdir=LR, ranksep=0.15, nodesep=0.05, fontname="Helvetica", fontsize=10, '
        "labelloc=b, labeljust=l];",
        'node [shape=box, style=rounded, fontname="Helvetica", fontsize=10, width=0, height=0.22, '
        'margin="0.04,0.02"];',
        'edge [fontname="Helvetica", fontsize=10, arrowsize=0.6];',
    ]
    frames = list(dict.fromkeys([e["parent"] for e in data.values()] + list(data)))
    for frame in frames:
        lines.append(f'"{_quoted(frame)}" [label="{_drawn_name(frame)}", '
                     f'tooltip="{_quoted(frame)}"];')
    for child, entry in data.items():
        is_static = bool(info.get(child, {}).get("is_static"))
        tooltip = tf2_edge_text(entry) + _values_text(values.get(child))
        attributes = [f'tooltip="{tooltip}"']
        if is_static:
            attributes += ["style=dashed", f'color="{colour.get(entry["broadcaster"], "gray45")}"']
        else:
            age = max(0.0, (now_ns - info[child]["most_recent_ns"]) / 1e9) if child in info else 0
            attributes += [f'label="{entry["rate"]:.1f} Hz\\n{age:.1f} s ago"', "penwidth=1.3"]
            if colour:
                attributes.append(f'color="{colour[entry["broadcaster"]]}"')
        lines.append(f'"{_quoted(entry["parent"])}" -> "{_quoted(child)}" '
                     f"[{', '.join(attributes)}];")
    legend = [f"view_frames Result &#160; Recorded at time: {recorded_time}",
              "dashed: static transform (its values: hover over the edge in the SVG)",
              "solid: dynamic transform, its average rate and the time since its latest one"]
    if colour:
        legend.append("Broadcasters: " + " &#160; ".join(
            f'<font color="{colour[b]}">{_html(b)}</font>' for b in broadcasters))
    else:
        legend.append(f"Broadcaster: {_html(broadcasters[0])}")
    lines.append("label=<" + '<br align="left"/>'.join(legend) + '<br align="left"/>>;')
    lines.append("}")
    return "\n".join(lines) + "\n"


def view_frames_data(buffer: Any) -> dict[str, Any]:
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
    written: list[str] = []
    if dot is None:
        return written
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


def latest_values(buffer: Any, data: dict[str, Any]) -> dict[str, Any]:
    """child -> (tx, ty, tz, qx, qy, qz, qw) of its latest transform from its parent."""
    out = {}
    for child, entry in data.items():
        try:
            t = buffer.lookup_transform(entry["parent"], child, 0)
        except Exception:  # noqa: BLE001 - a frame with no data at the common time
            continue
        tr, q = t.transform.translation, t.transform.rotation
        out[child] = (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w)
    return out


def _load_bag(path: str) -> Any:
    import warnings

    from ..bag import BagError, load

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            buffer = load(path)
    except BagError as exc:  # includes the missing-extra error
        raise CommandError(str(exc)) from None
    for w in caught:
        print(f"tf2py view-frames: warning: {w.message}", file=sys.stderr, flush=True)
    return buffer


def _core_listening(core: str | None) -> bool:
    """Whether something accepts connections at the core's address (tcp:// only; other
    schemes are given the benefit of the doubt)."""
    import socket

    from ..transport.zmq.address import bus_endpoints

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


def run(args: argparse.Namespace) -> int:
    from ..buffer.time import Time
    from ..transport.address import core_address

    wait_time = wait_time_of(args)
    name = args.output or time.strftime("frames_%Y-%m-%d_%H.%M.%S")
    for suffix in (".gv", ".pdf", ".svg"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if args.from_bag is not None:
        where = args.from_bag
        buffer = _load_bag(args.from_bag)
        info = buffer.frames_info()
        # "Now" is the end of the recording: its newest dynamic transform (statics' stamps
        # say nothing about when the recording ended).
        now_ns = max((e["most_recent_ns"] for e in info.values() if not e["is_static"]),
                     default=max((e["most_recent_ns"] for e in info.values()), default=0))
    else:
        where = core_address(args.core)
        print(f"Listening to tf data on {where} during {wait_time:g} seconds...", flush=True)
        buffer, _, _ = listen(args.core, wait_time, command="view-frames")  # Ctrl-C: draw it
        info = buffer.frames_info()
        now_ns = Time.now().nanoseconds
    data = view_frames_data(buffer)
    if not data and args.from_bag is None and not _core_listening(args.core):
        # As `frames` and `monitor`: no core at all is an error, not an empty picture. (A core
        # with nothing on it gets tf2's "No tf data received" picture, as view_frames draws.)
        raise CommandError(f"no core answered at {where} "
                           f"({no_data_hint(args.core, broadcasting=False)})")
    recorded_time = now_ns // 1_000_000_000 + (now_ns % 1_000_000_000) / 1e9
    if args.classic:
        dot = generate_dot(data, recorded_time)
    else:
        dot = generate_readable_dot(data, info, recorded_time, now_ns,
                                    latest_values(buffer, data))
    if not data:
        if args.from_bag is not None:
            print(f"No tf data in {where}", file=sys.stderr, flush=True)
        else:
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

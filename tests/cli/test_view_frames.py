"""`tf2py view-frames`: NAME.gv with tf2's labels and legend, NAME.pdf and NAME.svg through
Graphviz's dot, tf2's "No tf data received" graph, and the message when dot is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from helpers import SHARED_DATA
from tf2py import make_transform
from tf2py.cli.view_frames import generate_dot

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed (apt-get install graphviz)")


def test_generate_dot_has_tf2s_edge_labels_and_legend():
    data = {"odom": {"parent": "map", "broadcaster": "loc", "rate": 10.0, "buffer_length": 2.5,
                     "most_recent_transform": 12.5, "oldest_transform": 10.0}}
    assert generate_dot(data, 99.5) == (
        'digraph G {\n'
        '"map" -> "odom"[label=" Broadcaster: loc\\nAverage rate: 10.0\\nBuffer length: 2.5\\n'
        'Most recent transform: 12.5\\nOldest transform: 10.0\\n"];\n'
        'edge [style=invis];\n'
        ' subgraph cluster_legend { style=bold; color=black; label ="view_frames Result";\n'
        '"Recorded at time: 99.5"[ shape=plaintext ] ;\n'
        '}->"map";\n}'
    )


@needs_dot
def test_view_frames_classic_writes_tf2s_gv_pdf_and_svg_of_what_it_heard(core, repeat, latch, tf2py,
                                                             tmp_path):
    sender = repeat(core, [make_transform("map", "odom", (1, 0, 0))], live=True)
    latch(core, [make_transform("odom", "laser", (0.2, 0, 0.1))])
    result = tf2py("view-frames", "-o", "tree", "--wait-time", "1.0", "--core", core,
                   "--classic", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    gv = (tmp_path / "tree.gv").read_text()
    assert gv.startswith("digraph G {\n")
    edge = re.search(r'"map" -> "odom"\[label=" (.*)"\];', gv).group(1).split("\\n")
    assert edge[0] == f"Broadcaster: {sender.authority}"
    assert re.fullmatch(r"Average rate: \d+\.\d+", edge[1])
    assert 2.0 < float(edge[1].split(": ")[1]) < 200.0
    assert re.fullmatch(r"Buffer length: \d+\.\d+", edge[2])
    assert re.fullmatch(r"Most recent transform: \d{10}\.\d+", edge[3])
    assert re.fullmatch(r"Oldest transform: \d{10}\.\d+", edge[4])
    assert ('"odom" -> "laser"[label=" Broadcaster: ' in gv
            and "Average rate: 10000.0\\nBuffer length: 0.0\\nMost recent transform: 0.0\\n" in gv)
    assert re.search(r'"Recorded at time: \d{10}\.\d+"\[ shape=plaintext \] ;\n}->"map";\n}$', gv)
    assert (tmp_path / "tree.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (tmp_path / "tree.svg").read_bytes()
    assert result.stdout.splitlines()[-1] == "Wrote tree.gv, tree.pdf, tree.svg"


@needs_dot
def test_view_frames_without_data_draws_no_tf_data_received(core, tf2py, tmp_path):
    result = tf2py("view-frames", "-o", "empty", "--wait-time", "0.2", "--core", core,
                   cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "empty.gv").read_text() == 'digraph G { "No tf data received" }'
    assert (tmp_path / "empty.pdf").exists() and (tmp_path / "empty.svg").exists()
    assert "No tf data received from" in result.stderr


def test_view_frames_with_no_core_exits_1_with_one_line(tf2py, tmp_path):
    from cli_support import free_bus_address

    where = free_bus_address()
    result = tf2py("view-frames", "-o", "none", "--wait-time", "0.2", "--core", where,
                   cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"tf2py view-frames: error: no core answered at {where} (is `tf2py core` running "
        "there?)"]
    assert not (tmp_path / "none.gv").exists()


def test_view_frames_without_dot_writes_the_gv_and_says_how_to_install_graphviz(
        core, latch, tf2py, tmp_path):
    latch(core, [make_transform("a", "b")])
    no_dot = tmp_path / "bin"
    no_dot.mkdir()  # a PATH with nothing on it; tf2py runs by the interpreter's full path
    result = tf2py("view-frames", "-o", "frames", "--wait-time", "0.5", "--core", core,
                   cwd=tmp_path, env={"PATH": str(no_dot)})
    assert result.returncode == 0, result.stderr
    assert '"a" -> "b"' in (tmp_path / "frames.gv").read_text()
    assert not (tmp_path / "frames.pdf").exists()
    message = result.stdout.splitlines()[-1]
    assert message.startswith("Wrote frames.gv. Graphviz's dot is not on PATH, so no PDF or SVG "
                              "was made: install Graphviz")
    assert "sudo apt-get install graphviz" in message
    assert message.endswith("then run: dot -Tpdf frames.gv -o frames.pdf")


def test_view_frames_default_name_has_the_date_and_time(core, tf2py, tmp_path):
    result = tf2py("view-frames", "--wait-time", "0", "--core", core, cwd=tmp_path,
                   env={"PATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    names = os.listdir(tmp_path)
    assert len(names) == 1
    assert re.fullmatch(r"frames_\d{4}-\d\d-\d\d_\d\d\.\d\d\.\d\d\.gv", names[0])


def test_view_frames_reports_an_unwritable_output_in_one_line(core, tf2py, tmp_path):
    result = tf2py("view-frames", "-o", str(tmp_path / "missing" / "x"), "--wait-time", "0",
                   "--core", core)
    assert result.returncode == 1
    assert re.fullmatch(r"tf2py view-frames: error: cannot write .*missing/x\.gv: "
                        r"No such file or directory", result.stderr.strip().splitlines()[-1])


def _buffer_with(edges, authority="test"):
    from tf2py import Buffer

    buffer = Buffer()
    for parent, child in edges:
        buffer.set_transform(make_transform(parent, child, stamp=1.0), authority)
        buffer.set_transform(make_transform(parent, child, stamp=3.3333333), authority)
    return buffer


def test_view_frames_data_is_the_yaml_report_read_back():
    import yaml

    from tf2py.cli.view_frames import view_frames_data

    buffer = _buffer_with([("map", "odom")])
    buffer.set_transform(make_transform("odom", "laser", stamp=1.0), "other", is_static=True)
    assert view_frames_data(buffer) == yaml.safe_load(buffer.all_frames_as_yaml())


@pytest.mark.parametrize("child", ["x: y", "yes", "123", 'we"ird', "back\\slash", "#hash"])
def test_view_frames_draws_frames_whose_names_are_not_plain_yaml(child, tmp_path):
    from tf2py.cli.view_frames import view_frames_data

    buffer = _buffer_with([("map", child)], authority='a "quoted" node')
    dot = generate_dot(view_frames_data(buffer), 1.0)
    quoted = child.replace("\\", "\\\\").replace('"', '\\"')
    assert f'"map" -> "{quoted}"[label=" Broadcaster: a \\"quoted\\" node\\n' in dot
    if shutil.which("dot") is not None:  # and Graphviz reads it
        (tmp_path / "t.gv").write_text(dot)
        result = subprocess.run(["dot", "-Tsvg", str(tmp_path / "t.gv")],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr


# --- the readable drawing (the default) ---------------------------------------------------

TF2_KEYS = ["Broadcaster", "Average rate", "Buffer length", "Most recent transform",
            "Oldest transform"]
TURTLEBOT = SHARED_DATA / "nav2_turtlebot.mcap"
#: A4 landscape, in points: the page the TurtleBot tree must fit at 100 % (no scaling).
PAGE_W, PAGE_H = 842, 595


def _tooltips(gv: str) -> dict:
    """(parent, child) -> the tf2 fields of that edge's tooltip, parsed as a user would."""
    out = {}
    for parent, child, tooltip in re.findall(r'^"(.*?)" -> "(.*?)" \[tooltip="(.*?)"', gv,
                                            re.M):
        fields = [line.split(": ", 1) for line in tooltip.split("\\n") if line]
        out[(parent, child)] = dict(fields)
    return out


@needs_dot
def test_view_frames_draws_dynamic_edges_with_rate_and_age_statics_dashed(
        core, repeat, latch, tf2py, tmp_path):
    sender = repeat(core, [make_transform("map", "odom", (1, 0, 0))], live=True)
    latch(core, [make_transform("odom", "laser", (0.25, 0, 0.125))])
    # (3 s: a loaded machine may start the command late into a shorter window)
    result = tf2py("view-frames", "-o", "tree", "--wait-time", "3.0", "--core", core,
                   cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    gv = (tmp_path / "tree.gv").read_text()
    dynamic = re.search(r'^"map" -> "odom" \[(.*)\];$', gv, re.M).group(1)
    rate, age = re.search(r'label="(\d+\.\d) Hz\\n(\d+\.\d) s ago"', dynamic).groups()
    assert 2.0 < float(rate) < 200.0 and 0.0 <= float(age) < 5.0
    static = re.search(r'^"odom" -> "laser" \[(.*)\];$', gv, re.M).group(1)
    assert "style=dashed" in static and "label=" not in static
    tips = _tooltips(gv)
    assert list(tips[("map", "odom")])[:5] == TF2_KEYS
    assert tips[("map", "odom")]["Broadcaster"] == sender.authority
    assert tips[("odom", "laser")]["Average rate"] == "10000.0"
    assert tips[("odom", "laser")]["translation"] == "(0.25, 0, 0.125)"
    assert re.search(r"Recorded at time: \d{10}\.\d+", gv)
    assert b"<svg" in (tmp_path / "tree.svg").read_bytes()
    assert (tmp_path / "tree.pdf").read_bytes().startswith(b"%PDF")


def test_readable_tooltips_hold_tf2s_label_text_for_every_edge():
    from tf2py.cli.view_frames import generate_readable_dot, view_frames_data

    buffer = _buffer_with([("map", "odom"), ("odom", "base")])
    buffer.set_transform(make_transform("base", "laser", stamp=1.0), "other", is_static=True)
    data = view_frames_data(buffer)
    dot = generate_readable_dot(data, buffer.frames_info(), 5.0, 5_000_000_000)
    tips = _tooltips(dot)
    assert set(tips) == {("map", "odom"), ("odom", "base"), ("base", "laser")}
    for (_, child), fields in tips.items():
        entry = data[child]
        assert fields == {
            "Broadcaster": entry["broadcaster"],
            "Average rate": str(entry["rate"]),
            "Buffer length": str(entry["buffer_length"]),
            "Most recent transform": str(entry["most_recent_transform"]),
            "Oldest transform": str(entry["oldest_transform"]),
        }
    # Two broadcasters: edges coloured, both named in the legend in their colours.
    colours = set(re.findall(r'color="(#[0-9a-f]{6})"', dot))
    assert len(colours) == 2
    assert all(f'<font color="{c}">' in dot for c in colours)
    assert ">other</font>" in dot and ">test</font>" in dot


def test_long_frame_names_are_drawn_on_two_lines_but_keep_their_id():
    from tf2py.cli.view_frames import _drawn_name

    assert _drawn_name("base_link") == "base_link"
    assert _drawn_name("oakd_right_camera_optical_frame") == "oakd_right_camera_\\noptical_frame"
    assert _drawn_name("averyveryverylongnamewithoutbreaks") == "averyveryverylongnamewithoutbreaks"
    from tf2py.cli.view_frames import generate_readable_dot, view_frames_data

    buffer = _buffer_with([("map", "oakd_right_camera_optical_frame")])
    dot = generate_readable_dot(view_frames_data(buffer), buffer.frames_info(), 1.0, 0)
    assert ('"oakd_right_camera_optical_frame" [label="oakd_right_camera_\\noptical_frame", '
            'tooltip="oakd_right_camera_optical_frame"];') in dot


def _svg_size_and_fonts(svg: str):
    width, height = (float(v) for v in re.search(
        r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    scale = re.search(r'<g id="graph0" class="graph" transform="scale\(([\d.]+) ([\d.]+)\)',
                      svg).groups()
    fonts = [float(v) for v in re.findall(r'font-size="([\d.]+)"', svg)]
    return width, height, tuple(float(v) for v in scale), fonts


@needs_dot
@pytest.mark.skipif(not TURTLEBOT.exists(), reason="shared recordings not present")
def test_view_frames_from_bag_draws_the_turtlebot_tree_on_one_landscape_page(tf2py, tmp_path):
    result = tf2py("view-frames", "--from-bag", str(TURTLEBOT), "-o", "tb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "Wrote tb.gv, tb.pdf, tb.svg"
    gv = (tmp_path / "tb.gv").read_text()
    tips = _tooltips(gv)
    assert len(tips) == 33  # 34 frames, one root
    assert tips[("map", "odom")]["Average rate"] == "9.534"
    assert tips[("odom", "base_link")]["Broadcaster"] == "bag:nav2_turtlebot.mcap"
    assert len(re.findall(r"style=dashed", gv)) == 29  # the bag's /tf_static edges
    assert re.search(r'^"map" -> "odom" \[.*label="9\.5 Hz\\n\d\.\d s ago"', gv, re.M)
    svg = (tmp_path / "tb.svg").read_text()
    width, height, scale, fonts = _svg_size_and_fonts(svg)
    assert scale == (1.0, 1.0)
    assert width <= PAGE_W and height <= PAGE_H, (width, height)
    assert fonts and min(fonts) >= 10.0
    # Every frame is drawn (its name, maybe on two lines, is in the SVG's text).
    texts = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    for _parent, child in tips:
        assert child.split("_")[-1] in texts
    # And it renders to PNG, a picture a person can look at, of the page's size at 96 dpi.
    png = tmp_path / "tb.png"
    subprocess.run(["dot", "-Tpng", str(tmp_path / "tb.gv"), "-o", str(png)], check=True,
                   timeout=60)
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG")
    px_w, px_h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert px_w <= PAGE_W * 96 / 72 + 2 and px_h <= PAGE_H * 96 / 72 + 2


@needs_dot
@pytest.mark.skipif(not TURTLEBOT.exists(), reason="shared recordings not present")
def test_classic_layout_of_the_turtlebot_tree_does_not_fit_the_page(tf2py, tmp_path):
    # What the readable layout is for: tf2's own drawing of the same tree is pages wide.
    result = tf2py("view-frames", "--from-bag", str(TURTLEBOT), "--classic", "-o", "tb",
                   cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    width, _, _, _ = _svg_size_and_fonts((tmp_path / "tb.svg").read_text())
    assert width > 3 * PAGE_W
    assert '"map" -> "odom"[label=" Broadcaster: bag:nav2_turtlebot.mcap\\nAverage rate: ' \
        '9.534\\n' in (tmp_path / "tb.gv").read_text()


def test_view_frames_from_a_missing_bag_fails_in_one_line(tf2py, tmp_path):
    result = tf2py("view-frames", "--from-bag", str(tmp_path / "nope.mcap"), "-o", "x",
                   cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"tf2py view-frames: error: {tmp_path / 'nope.mcap'}: no such file or directory")
    assert not (tmp_path / "x.gv").exists()

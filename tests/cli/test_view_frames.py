"""`tf2py view-frames`: NAME.gv with tf2's labels and legend, NAME.pdf and NAME.svg through
Graphviz's dot, tf2's "No tf data received" graph, and the message when dot is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from cli_support import core, latch, repeat, tf2py  # noqa: F401 (fixtures)
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
def test_view_frames_writes_gv_pdf_and_svg_of_what_it_heard(core, repeat, latch, tf2py,
                                                             tmp_path):
    sender = repeat(core, [make_transform("map", "odom", (1, 0, 0))], live=True)
    latch(core, [make_transform("odom", "laser", (0.2, 0, 0.1))])
    result = tf2py("view-frames", "-o", "tree", "--wait-time", "1.0", "--core", core,
                   cwd=tmp_path)
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

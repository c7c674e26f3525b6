"""The README says, in words a reader sees, what each Python block needs; and the keys block
runs beside a demo that holds the bus address (it starts a core on free ports of its own)."""

from __future__ import annotations

import subprocess
import sys

from helpers import REPO
from test_readme import python_blocks
from tf2py import Core

README = REPO / "README.md"


def _visible_paragraph_before(lines: list[str], fence_line: int) -> str:
    """The text paragraph just above a block (its readme-test comment skipped)."""
    i = fence_line - 2  # 0-based line above the fence
    while i >= 0 and (not lines[i].strip() or lines[i].lstrip().startswith("<!--")):
        i -= 1
    paragraph = []
    while i >= 0 and lines[i].strip() and not lines[i].startswith("```"):
        paragraph.append(lines[i])
        i -= 1
    return " ".join(reversed(paragraph))


def test_every_readme_block_says_what_it_needs():
    lines = README.read_text().splitlines()
    blocks = python_blocks(README)
    assert len(blocks) >= 8
    previous = None
    for block in blocks:
        text = _visible_paragraph_before(lines, block.line)
        if block.says("continues"):
            assert "above" in text or "before" in text, (block.where, text)
        elif block.says("background") or previous is not None and previous.says("background"):
            # robot.py and the block that listens to it share one paragraph.
            assert "need" in text or "running" in text or "above" in text, (block.where, text)
        else:
            assert "need" in text, (block.where, text)
        previous = block


def test_the_keys_block_runs_while_the_default_bus_is_taken(tmp_path):
    (keys_block,) = [b for b in python_blocks(README) if 'keys="site"' in b.code]
    subprocess.run([sys.executable, "-m", "tf2py.cli.main", "keygen", "site"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=120)
    script = tmp_path / "keys_block.py"
    script.write_text(keys_block.code)
    # A core already serves the address the block's processes would default to (the demo's).
    with Core("tcp://127.0.0.1:0") as demo:
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env={"TF2PY_CORE": demo.address, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("a keyed core at tcp://127.0.0.1:")
    assert demo.address not in done.stdout

"""``python -m bench report``: rewrites the generated tables of docs/performance.md from the
JSON the benchmarks wrote (bench/results/NAME.json), between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``, each with its conditions line. ``--check``: exit 1 if the page is
not what the JSON gives (nothing written)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from bench.harness import REPO, RESULTS_DIR

PAGE = REPO / "docs" / "performance.md"
BLOCK = re.compile(r"(<!-- bench:([a-z0-9_]+) -->\n)(.*?)(<!-- /bench:\2 -->)", re.S)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def conditions_line(result: dict[str, Any]) -> str:
    c = result["conditions"]
    peers = ", ".join(f"{k} {v}" for k, v in c.get("peers", {}).items())
    return (f"Measured {c['utc']} by `{result['command']}` at tf2py {c['commit']}: "
            f"{c['cpu']}, {c['cpu_count']} CPUs, Python {c['python']}, numpy {c['numpy']}"
            + (f", {peers}" if peers else "")
            + f"; load average {c['load_before']} before, {c.get('load_after', '?')} after"
            f" ({c.get('seconds', '?')} s)."
            + (" A quick run on a machine shared with other engineers: expect ±30 % and more."
               if result.get("quick") else ""))


def render(result: dict[str, Any]) -> str:
    """The markdown of one run: its conditions line, then each table, then its notes."""
    out = [conditions_line(result), ""]
    for table in result["tables"]:
        out.append(f"*{table['title']}*")
        out.append("")
        out.append("| " + " | ".join(_cell(c) for c in table["columns"]) + " |")
        out.append("| " + " | ".join("---" for _ in table["columns"]) + " |")
        for row in table["rows"]:
            out.append("| " + " | ".join(_cell(c) for c in row["cells"]) + " |")
        out.append("")
    for note in result.get("notes", []):
        out.append(f"- {note}")
    if result.get("notes"):
        out.append("")
    return "\n".join(out)


def rewrite(text: str, results_dir: Path) -> tuple[str, list[str]]:
    """The page with every block regenerated; the names of blocks without a JSON file."""
    missing: list[str] = []

    def block(m: re.Match[str]) -> str:
        path = results_dir / f"{m.group(2)}.json"
        if not path.exists():
            missing.append(m.group(2))
            return m.group(0)
        with open(path) as f:
            return m.group(1) + render(json.load(f)) + m.group(4)

    return BLOCK.sub(block, text), missing


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench report", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    parser.add_argument("--page", default=str(PAGE))
    parser.add_argument("--results", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    page = Path(args.page)
    text = page.read_text()
    new, missing = rewrite(text, Path(args.results))
    for name in missing:
        print(f"bench report: no {name}.json in {args.results}; that table left as it is")
    if args.check:
        print("up to date" if new == text else f"{page} differs from the JSON")
        return 0 if new == text else 1
    if new != text:
        page.write_text(new)
    print(f"bench report: {len(BLOCK.findall(text))} tables in {page}")
    return 0

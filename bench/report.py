"""A benchmark run's results: its conditions, tables and notes, written as JSON (``Run``); and
``python -m bench report``, which rewrites the generated tables of docs/performance.md from the
JSON the benchmarks wrote (bench/results/NAME.json), between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``, each with its conditions line. ``--check``: exit 1 if the page is
not what the JSON gives (nothing written)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
DASH = "\u2014"

# --- the run, its conditions and tables


class Missing(Exception):
    """A benchmark needs something absent (valgrind, a peer library): said in one line, exit 0."""



def load_average() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def git_commit() -> str:
    """The checkout's commit, ``-dirty`` when the tree has changes."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or "?"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def version_of(distribution: str) -> str:
    """The installed version of a distribution, or "not installed"."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def conditions() -> dict[str, Any]:
    """Where and when: UTC time, commit, CPU, Python, numpy, load average at the start."""
    return {
        "utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "commit": git_commit(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_before": load_average(),
        "peers": {},
    }


def fmt_ns(ns: float | None, unit: str = "ns") -> str:
    """ns as ns / µs with 3 significant figures (``unit="B"``: bytes)."""
    if ns is None:
        return DASH
    if unit == "B":
        return "%.1f B" % ns
    if ns >= 10_000:
        return "%.1f \u00b5s" % (ns / 1000)
    if ns >= 1000:
        return "%.2f \u00b5s" % (ns / 1000)
    return "%.0f ns" % ns


def fmt_ratio(ratio: float | None) -> str:
    return DASH if ratio is None else "%.2f" % ratio


class Table:
    """Rows of one table: cells as printed (strings), plus raw figures for comparisons."""

    def __init__(self, title: str, columns: Sequence[str], widths: Sequence[int] | None = None
                 ) -> None:
        self.title = title
        self.columns = list(columns)
        self.widths = list(widths) if widths else [48] + [14] * (len(columns) - 1)
        self.rows: list[dict[str, Any]] = []
        print(f"\n== {title}")
        self._print(self.columns)

    def _print(self, cells: Sequence[str]) -> None:
        line = "".join(("%-*s " % (w, c)) for w, c in zip(self.widths, cells))
        print(line.rstrip(), flush=True)

    def add(self, *cells: object, **figures: float | int | str | bool | None) -> None:
        """One row: ``cells`` as shown (one per column), ``figures`` the raw numbers."""
        text = [str(c) for c in cells]
        if len(text) != len(self.columns):
            raise ValueError(f"{self.title}: {len(text)} cells for {len(self.columns)} columns")
        self.rows.append({"cells": text, "figures": figures})
        self._print(text)

    def as_dict(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows}


class Run:
    """One benchmark run: its conditions, tables and notes; written as JSON at the end."""

    def __init__(self, name: str, quick: bool, argv: Sequence[str]) -> None:
        self.name = name
        self.quick = quick
        self.argv = list(argv)
        self.conditions = conditions()
        self.tables: list[Table] = []
        self.notes: list[str] = []
        self.started = time.monotonic()

    def peer(self, name: str, version: str) -> None:
        """Records a peer's version (the library or program measured beside tf2py)."""
        self.conditions["peers"][name] = version

    def table(self, title: str, columns: Sequence[str], widths: Sequence[int] | None = None
              ) -> Table:
        table = Table(title, columns, widths)
        self.tables.append(table)
        return table

    def note(self, text: str) -> None:
        """A line printed now and kept under the tables (a figure not in a table, a caveat)."""
        print(text, flush=True)
        self.notes.append(text)

    def command(self) -> str:
        return " ".join(["python -m bench", self.name, *(["--quick"] if self.quick else []),
                         *self.argv])

    def finish(self) -> dict[str, Any]:
        self.conditions["load_after"] = load_average()
        self.conditions["seconds"] = round(time.monotonic() - self.started, 1)
        return {"name": self.name, "command": self.command(), "quick": self.quick,
                "conditions": self.conditions, "tables": [t.as_dict() for t in self.tables],
                "notes": self.notes}

    def write(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            json.dump(self.finish(), f, indent=1, ensure_ascii=False)
            f.write("\n")


# --- the report

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

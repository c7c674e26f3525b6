"""``python -m bench NAME [--quick] [--json FILE] [--save] [ARGS]``, ``python -m bench --list``,
``python -m bench smoke`` (every benchmark's --quick, for CI), ``python -m bench report``."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time

from bench import BENCHMARKS
from bench.harness import PY, REPO, RESULTS_DIR, Missing, Run


def run_one(name: str, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m bench {name}",
                                     description=BENCHMARKS[name], add_help=False)
    parser.add_argument("--quick", action="store_true", help="a short run (seconds)")
    parser.add_argument("--json", metavar="FILE", help="write the run's rows and conditions")
    parser.add_argument("--save", action="store_true",
                        help=f"write the JSON to bench/results/{name}.json (for the report)")
    ours, rest = parser.parse_known_args(argv)
    if "-h" in rest or "--help" in rest:
        parser.print_help()
        print("\nthe benchmark's own options:")
    module = importlib.import_module(f"bench.{name}")
    run = Run(name, ours.quick, rest)
    path = ours.json or (RESULTS_DIR / f"{name}.json" if ours.save else None)
    try:
        module.main(run, rest)
    except Missing as missing:
        print(f"bench {name}: skipped: {missing}")
        run.notes.append(f"Not measured: {missing}.")
    if path:
        run.write(path)
        print(f"bench {name}: wrote {path}")
    return 0


def smoke(names: list[str], timeout: float, save: bool) -> int:
    """Every benchmark's --quick in its own process; non-zero if any crashed or hung.
    ``save``: their JSON goes to bench/results/ (for the report), else to a temporary folder."""
    failed = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = RESULTS_DIR if save else tmp
        for name in names or list(BENCHMARKS):
            t0 = time.monotonic()
            try:
                done = subprocess.run([PY, "-m", "bench", name, "--quick", "--json",
                                       f"{folder}/{name}.json"], cwd=REPO, timeout=timeout,
                                      capture_output=True, text=True)
                status = done.returncode
                out = done.stdout + done.stderr
            except subprocess.TimeoutExpired as e:
                status, out = -1, f"timed out after {timeout:.0f} s\n{e.stdout or ''}"
            skipped = [line for line in out.splitlines() if "skipped:" in line]
            print(f"{name:24s} {'ok' if status == 0 else 'FAILED':7s} {time.monotonic() - t0:5.1f} s"
                  + (f"  ({skipped[0].split('skipped: ', 1)[1]})" if skipped else ""), flush=True)
            if status != 0:
                failed.append(name)
                print("".join(f"    {line}\n" for line in str(out).splitlines()[-30:]))
    print(f"{len(failed)} failed in {time.monotonic() - started:.0f} s"
          + (": " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--list":
        for name, what in BENCHMARKS.items():
            print(f"{name:24s} {what}")
        return 0
    if argv[0] == "report":
        from bench.report import main as report_main

        return report_main(argv[1:])
    if argv[0] == "smoke":
        parser = argparse.ArgumentParser(prog="python -m bench smoke")
        parser.add_argument("names", nargs="*", help="benchmarks (default: all)")
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds per benchmark")
        parser.add_argument("--save", action="store_true",
                            help="write each JSON to bench/results/ (for python -m bench report)")
        args = parser.parse_args(argv[1:])
        return smoke(args.names, args.timeout, args.save)
    if argv[0] not in BENCHMARKS:
        print(f"python -m bench: no benchmark {argv[0]!r} (python -m bench --list)", file=sys.stderr)
        return 2
    return run_one(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())

"""The attack classes of bench/faults.py on the tools: bad bags (``tf2py.bag.load``), bad launch
files, and bad numbers given to ``static-transform-publisher``."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

from bench.faults_support import Row
from simulators.shared_data import shared_data


def attack_bags(n):
    from tf2py.bag import BagError, load

    row = Row("bad bags (bag.load)")
    rng = random.Random(3)
    data_dir = shared_data()
    mcap = (data_dir / "nav2_turtlebot.mcap").read_bytes() if data_dir.exists() else b""
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "fifo"
        os.mkfifo(fifo)
        for i in range(n):
            path = Path(tmp) / f"bag{i}{rng.choice(['', '.bag', '.mcap', '.db3'])}"
            kind = i % 5
            if kind == 0:
                path = fifo
            elif kind == 1 and mcap:
                path.write_bytes(mcap[: rng.randrange(1, len(mcap))])
            elif kind == 2 and mcap:
                b = bytearray(mcap)
                for _ in range(20):
                    b[rng.randrange(len(b))] = rng.randrange(256)
                path.write_bytes(bytes(b))
            elif kind == 3:
                path.write_bytes(rng.choice([b"\x89MCAP0\r\n", b"#ROSBAG V2.0\n",
                                             b"SQLite format 3\x00"])
                                 + bytes(rng.randrange(256) for _ in range(rng.randrange(500))))
            else:
                path.write_bytes(mcap)  # a valid bag under another name: must load
            try:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    load(path, strict=bool(i % 2))
            except BagError:
                if kind == 4:
                    row.lost += 1
            except Exception:  # noqa: BLE001 - anything else is a crash
                row.crashes += 1
            row.tried += 1
    row.note = "valid bags under other names all loaded" if not row.lost else ""
    return row


def attack_launch_files(n):
    from tf2py.cli.launch_file import LaunchFileError, load

    row = Row("bad launch files")
    rng = random.Random(4)
    pieces = ["launch:", "- process:", "cmd:", "$(var x)", "$(env", "{", "}", "[", "]", ":",
              "  ", "\n", "- arg: {name: x, default: 'a b'}", "name:", "'", '"', "\x00", "é"]
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "fifo.yaml"
        os.mkfifo(fifo)
        for i in range(n):
            if i % 10 == 0:
                path = rng.choice([str(fifo), "/dev/zero", "/dev/null"])
            else:
                path = str(Path(tmp) / f"f{i}.yaml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(" ".join(rng.choice(pieces) for _ in range(rng.randrange(1, 40))))
            try:
                load(path, {"x": "1"})
            except LaunchFileError:
                pass
            except Exception:  # noqa: BLE001
                row.crashes += 1
            row.tried += 1
    return row


def attack_numbers(n):
    from tf2py.cli.common import CommandError
    from tf2py.cli.main import build_parser
    from tf2py.cli.static_transform_publisher import parse

    row = Row("bad numbers (static-transform-publisher)")
    rng = random.Random(5)
    parser, _ = build_parser()
    words = ["1e308", "-1e308", "1e309", "-inf", "inf", "nan", "1_0", "0x10", "", "-", "1e-320",
             "0", "--", "١", "1.5", "-0"]
    for _ in range(n):
        argv = ["static-transform-publisher", "--frame-id", "a", "--child-frame-id", "b"]
        for flag in rng.sample(["x", "y", "z", "qx", "qy", "qz", "qw"], rng.randrange(1, 5)):
            argv += [f"--{flag}", rng.choice(words)]
        try:
            args, extra = parser.parse_known_args(argv)
            _, _, t, q = parse(args)
            if any(c != c for c in (*t, *q)) or abs(sum(c * c for c in q) - 1) > 1e-9:
                row.crashes += 1  # a NaN or a non-unit quaternion published
        except (CommandError, SystemExit):
            pass
        except Exception:  # noqa: BLE001
            row.crashes += 1
        row.tried += 1
    return row

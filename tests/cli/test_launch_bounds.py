"""Launch files that would explode (issue 30): chained $(var) defaults, deep nesting and
aliases of aliases are each one line naming the file, before anything starts."""

from __future__ import annotations

import time

import pytest

from tf2py.cli.launch_file import MAX_SUBSTITUTED_CHARS, LaunchFileError, load


def chained_defaults(steps: int) -> str:
    """A 1 KB file whose args double at each step: 2**steps characters if nothing bounds it."""
    lines = ["launch:", '  - arg: {name: v0, default: "xxxxxxxx"}']
    for k in range(1, steps + 1):
        lines.append(f'  - arg: {{name: v{k}, default: "$(var v{k - 1})$(var v{k - 1})"}}')
    lines.append(f'  - process: {{name: p, cmd: "echo $(var v{steps})"}}')
    return "\n".join(lines) + "\n"


def test_chained_var_defaults_stop_at_the_substitution_bound(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(chained_defaults(60))
    assert path.stat().st_size < 4096
    started = time.monotonic()
    with pytest.raises(LaunchFileError) as info:
        load(str(path))
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert f"longer than {MAX_SUBSTITUTED_CHARS} characters" in message and "\n" not in message


def test_substitutions_under_the_bound_still_work(tmp_path):
    path = tmp_path / "fine.yaml"
    path.write_text(chained_defaults(10))  # 8 * 2**10 = 8 192 characters
    (spec,) = load(str(path))
    assert spec.cmd[-1] == "x" * 8 * 2**10


@pytest.mark.parametrize("text, words", [
    ("launch:\n  - " + "[" * 100_000 + "]" * 100_000 + "\n", "nested deeper than 64 levels"),
    ("launch:\n  - " + "{a: " * 500 + "x" + "}" * 500 + "\n", "nested deeper than 64 levels"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi")) + "launch: []\n", "aliases are expanded"),
])
def test_deep_or_exploding_yaml_is_one_line_from_the_command(tmp_path, tf2py, text, words):
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    result = tf2py("launch", str(path), "--check")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and str(path) in lines[0], result.stderr

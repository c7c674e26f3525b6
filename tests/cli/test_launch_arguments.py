"""`tf2py launch` arguments: NAME:=VALUE anywhere after FILE (also after --check), a $(var)
value with spaces stays one argument, a misspelt argument gets the closest name, the usage
shows NAME:=VALUE as optional."""

from __future__ import annotations

import textwrap

FILE = """\
launch:
  - arg: {name: rate, default: "1.0"}
  - arg: {name: greeting, default: "hello"}
  - process:
      name: show
      cmd: python -c "pass" --rate $(var rate) $(var greeting) "$(env TF2PY_NO_SUCH_VAR a)"
"""


def write(tmp_path):
    path = tmp_path / "args.yaml"
    path.write_text(textwrap.dedent(FILE))
    return path


def _cmd(stdout: str) -> str:
    (line,) = stdout.splitlines()
    return line


def test_an_argument_after_check_is_taken_like_one_before_it(tmp_path, tf2py):
    path = write(tmp_path)
    before = tf2py("launch", str(path), "rate:=5", "--check")
    after = tf2py("launch", str(path), "--check", "rate:=5")
    assert before.returncode == after.returncode == 0, after.stderr
    assert before.stdout == after.stdout
    assert "--rate 5 hello a" in _cmd(after.stdout)


def test_a_var_value_with_spaces_stays_one_argument(tmp_path, tf2py):
    path = tmp_path / "spaces.yaml"
    path.write_text(textwrap.dedent("""\
        launch:
          - arg: {name: msg, default: "x"}
          - process:
              name: say
              cmd: python -c "import sys; print(sys.argv[1:])" $(var msg) end
        """))
    result = tf2py("launch", str(path), "msg:=hello big world", timeout=60)
    assert result.returncode == 0, result.stderr
    assert "[say] ['hello big world', 'end']" in result.stdout


def test_a_misspelt_argument_suggests_the_closest(tmp_path, tf2py):
    path = write(tmp_path)
    result = tf2py("launch", str(path), "rte:=5", "--check")
    assert result.returncode == 1
    assert "unknown launch argument(s) on the command line: rte (did you mean 'rate'?)" in (
        result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_misspelt_var_in_the_file_suggests_the_closest(tmp_path, tf2py):
    path = tmp_path / "typo.yaml"
    path.write_text(textwrap.dedent("""\
        launch:
          - arg: {name: rate, default: "1"}
          - process: {cmd: python -c pass $(var rte)}
        """))
    result = tf2py("launch", str(path), "--check")
    assert result.returncode == 1
    assert "unknown launch argument 'rte' (did you mean 'rate'?)" in result.stderr


def test_usage_shows_name_value_as_optional(tf2py):
    result = tf2py("launch")
    assert result.returncode == 2
    assert "FILE" in result.stderr and "NAME:=VALUE" not in result.stderr
    assert "[NAME:=VALUE ...]" in tf2py("launch", "--help").stdout


def test_other_unknown_words_after_the_file_are_still_refused(tmp_path, tf2py):
    path = write(tmp_path)
    result = tf2py("launch", str(path), "--check", "--bogus")
    assert result.returncode == 2
    assert "unrecognized arguments: --bogus" in result.stderr

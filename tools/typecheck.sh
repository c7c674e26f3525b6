#!/usr/bin/env bash
# Type-check tf2py/ with mypy (--strict, from [tool.mypy] in pyproject.toml) and pyright
# ([tool.pyright]). Both come with the `dev` extra: pip install -e '.[dev]'. pyright is run
# as basedpyright, whose PyPI wheel bundles Node.js (pyright's own package downloads it).
#
#   tools/typecheck.sh            # both, on tf2py/
#   tools/typecheck.sh mypy       # one of them
#   PYTHON=.venv/bin/python tools/typecheck.sh
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
which=${1:-all}
status=0
if [ "$which" = all ] || [ "$which" = mypy ]; then
  echo "== mypy --strict tf2py" >&2
  "$python" -m mypy || status=1
fi
if [ "$which" = all ] || [ "$which" = pyright ]; then
  echo "== pyright tf2py" >&2
  "$python" -m basedpyright --pythonpath "$("$python" -c 'import sys; print(sys.executable)')" || status=1
fi
exit $status

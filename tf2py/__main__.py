"""``python -m tf2py``: the ``tf2py`` command (``python -m tf2py frames`` is ``tf2py frames``)."""

import sys

from tf2py.cli.main import main

if __name__ == "__main__":
    sys.exit(main())

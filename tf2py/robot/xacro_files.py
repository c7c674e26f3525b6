"""xacro files expanded to URDF text by the ``xacro`` package (the ``robot`` extra)."""

from __future__ import annotations

import contextlib
import io
import threading
import warnings
from collections.abc import Mapping
from typing import Any

from .errors import RobotModelError, RobotModelWarning
from .xml_tree import parse_xml

__all__ = ["expand_xacro"]

# xacro keeps its file stack and substitution arguments in module globals: one at a time.
_LOCK = threading.Lock()


def expand_xacro(path: str, args: Mapping[str, object]) -> str:
    """The URDF text of the xacro file ``path``, with ``args`` as ``name:=value``.

    The file itself is first read by tf2py's own XML reader, so entities and external DTDs
    are refused before xacro (whose reader is ``xml.dom.minidom``) sees it. Any failure
    is a one-line ``RobotModelError``.
    """
    try:
        import xacro
    except ImportError:
        raise RobotModelError(path, None, "xacro",
                              "reading a .xacro file needs the xacro package: "
                              "pip install 'tf2py[robot]'") from None
    try:
        with open(path, "rb") as stream:
            parse_xml(stream.read(), path)
    except OSError as exc:
        raise RobotModelError(path, None, "file", f"cannot be read: {exc.strerror or exc}") from None
    mappings = {str(name): str(value) for name, value in args.items()}
    xacro_module: Any = xacro
    printed = io.StringIO()  # xacro prints its warnings, over several lines, on stderr
    with _LOCK:
        try:
            with contextlib.redirect_stderr(printed):
                document = xacro_module.process_file(path, mappings=mappings)
            text: str = document.toprettyxml(indent="  ")
        except Exception as exc:  # xacro raises its own and Python's errors alike
            detail = str(exc) or type(exc).__name__
            raise RobotModelError(path, None, "xacro", f"{type(exc).__name__}: {detail}") from None
        except SystemExit as exc:  # xacro's error() paths can exit
            raise RobotModelError(path, None, "xacro", f"xacro stopped (exit {exc.code})") from None
    said = "; ".join(line.strip() for line in printed.getvalue().splitlines() if line.strip())
    if said:  # one line, as the model's other warnings
        warnings.warn(f"{path}: xacro: {said}", RobotModelWarning, stacklevel=3)
    return text

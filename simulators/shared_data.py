"""Where the shared recordings are (``../shared/data``, read-only, provided beside every checkout
and CI run), for tests and benchmarks alike."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def shared_data() -> Path:
    """The shared recordings: ``../shared/data`` beside the checkout (as CI provides it), else
    beside the checkout this one was cloned from (``git clone . /tmp/fresh``), else
    ``$TF2PY_SHARED_DATA``; the first that exists (``../shared/data`` when none does)."""
    beside = REPO.parent / "shared" / "data"
    if beside.is_dir():  # (CI, and any checkout beside shared/: no git call at import)
        return beside
    candidates = []
    try:
        origin = subprocess.run(["git", "-C", str(REPO), "config", "--get", "remote.origin.url"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    if origin and "://" not in origin and ":" not in origin.split("/")[0]:  # a local path
        candidates.append(Path(origin).resolve().parent / "shared" / "data")
    if os.environ.get("TF2PY_SHARED_DATA"):
        candidates.append(Path(os.environ["TF2PY_SHARED_DATA"]))
    return next((path for path in candidates if path.is_dir()), beside)

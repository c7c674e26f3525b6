"""The one place that imports Cyclone DDS's Python binding (the ``ros2`` extra)."""

from __future__ import annotations

__all__ = ["dds", "MISSING_EXTRA", "require"]

MISSING_EXTRA = ("ros2:// needs Cyclone DDS's Python binding: pip install 'tf2py[ros2]' "
                 "(or pip install cyclonedds)")


class ExtraMissing(ImportError):
    """The ``ros2`` extra is not installed; the message is the one line to show."""

    one_line = True


try:
    import cyclonedds.core
    import cyclonedds.domain
    import cyclonedds.pub
    import cyclonedds.qos
    import cyclonedds.sub
    import cyclonedds.topic
    from cyclonedds._clayer import ddspy_take as _ddspy_take
    from cyclonedds._clayer import ddspy_write as _ddspy_write
except ImportError as exc:
    raise ExtraMissing(MISSING_EXTRA) from exc


class _Namespace:
    """The cyclonedds modules tf2py uses, and the two C-layer calls for raw samples."""

    core = cyclonedds.core
    domain = cyclonedds.domain
    pub = cyclonedds.pub
    qos = cyclonedds.qos
    sub = cyclonedds.sub
    topic = cyclonedds.topic
    ddspy_take = staticmethod(_ddspy_take)
    ddspy_write = staticmethod(_ddspy_write)


def require() -> type[_Namespace]:
    """The cyclonedds modules tf2py uses, as one namespace (importing this module raised
    ExtraMissing already if they are not installed)."""
    return _Namespace


dds = require()

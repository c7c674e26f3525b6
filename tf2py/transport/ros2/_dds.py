"""The one place that imports Cyclone DDS's Python binding (the ``ros2`` extra)."""

from __future__ import annotations

__all__ = ["dds", "MISSING_EXTRA", "require"]

MISSING_EXTRA = ("ros2:// needs Cyclone DDS's Python binding: pip install 'tf2py[ros2]' "
                 "(or pip install cyclonedds)")


class ExtraMissing(ImportError):
    """The ``ros2`` extra is not installed; the message is the one line to show."""

    one_line = True


def require():
    """The cyclonedds modules tf2py uses, as one namespace; ExtraMissing if not installed."""
    try:
        import cyclonedds.core
        import cyclonedds.domain
        import cyclonedds.pub
        import cyclonedds.qos
        import cyclonedds.sub
        import cyclonedds.topic
        from cyclonedds._clayer import ddspy_take, ddspy_write
    except ImportError as exc:
        raise ExtraMissing(MISSING_EXTRA) from exc

    class _Namespace:
        core = cyclonedds.core
        domain = cyclonedds.domain
        pub = cyclonedds.pub
        qos = cyclonedds.qos
        sub = cyclonedds.sub
        topic = cyclonedds.topic

    _Namespace.ddspy_take = staticmethod(ddspy_take)
    _Namespace.ddspy_write = staticmethod(ddspy_write)
    return _Namespace


dds = require()

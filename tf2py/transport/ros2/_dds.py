"""The one place that imports Cyclone DDS's Python binding (the ``ros2`` extra)."""

from __future__ import annotations

__all__ = ["dds", "ddspy_take", "ddspy_write", "MISSING_EXTRA"]

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
    from cyclonedds._clayer import ddspy_take, ddspy_write
except ImportError as exc:
    raise ExtraMissing(MISSING_EXTRA) from exc


#: Cyclone DDS's package, with the modules tf2py uses imported (``dds.core``, ``dds.qos``...).
dds = cyclonedds

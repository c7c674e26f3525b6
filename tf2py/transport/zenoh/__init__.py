"""Zenoh (the ``zenoh`` extra): ``zenoh://`` addresses, on rmw_zenoh's wire.

tf2py speaks on a Zenoh network exactly as a ROS 2 node running ``rmw_zenoh_cpp`` does for
``/tf`` and ``/tf_static`` (see docs/protocol.md, "Zenoh"), so ROS 2 robots on rmw_zenoh and
tf2py processes hear each other. The rooms:

- ``address``: parsing ``zenoh://[LOCATOR][?namespace=&domain=&mode=&config=]`` (pure).
- ``session``: the Zenoh configuration of an address and the shared session per process.
- ``tls``: keys on Zenoh (mutual TLS certificates in a keys folder).
- ``wire``: key expressions, attachments, liveliness tokens (public: the fleet uses them).

Importing this package needs nothing; using a session needs ``eclipse-zenoh``, else a
one-line ``ImportError`` that names the extra.
"""

from __future__ import annotations

from .address import ZenohAddress, is_zenoh_address, parse_zenoh_address

__all__ = ["ZenohAddress", "is_zenoh_address", "parse_zenoh_address"]

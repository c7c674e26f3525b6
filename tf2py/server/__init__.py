"""The buffer server and its client: remote ``lookup_transform`` goals (and the client's
``can_transform``, ``*_full`` and ``*_async`` forms on them) for processes that hold no
buffer. Uses buffer and transport.

``server`` (``BufferServer``, one loop thread) answers goals (``goals``, bounds in
``limits``) from one ``Buffer``, handing every lookup that must wait to the Buffer's own
index of waiting requests; ``client`` (``BufferClient``, blocking calls), ``client_io``
(futures on one I/O thread) and ``client_common`` are the other end; ``protocol`` is the
wire format. Goals and answers travel over a link that the address's scheme picks in the
transport's one scheme registry (``link``: ``zmq_link`` for ``tcp://``, ``ipc://``,
``inproc://``; ``zenoh_link`` for ``zenoh://``, with answers signed by ``zenoh_auth`` under
keys). ``fleet/`` is ``tf2py fleet``: one Buffer and lookup service for every robot on a
Zenoh domain.
"""

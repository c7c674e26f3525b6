"""Moving transforms, and other ROS 2 messages, between processes, on any bus. Uses tf2py.buffer.

One interface (``interface``: ``Transport``, the one scheme registry and
``transport_for(address)``, which picks a bus by the address's scheme; ``bus_classes``: the
table through which each bus names the classes its factory methods build) and the buses
behind it as sibling packages: ``zmq`` (``tcp://``, tf2py's own core, and what only it uses: its
sockets, CURVE ``keys``, ``tcp://`` parsing, the /clock codec), ``ros2`` (``ros2://``, DDS)
and ``zenoh`` (``zenoh://``, rmw_zenoh's wire), each importing its extra only when used.
The public classes ask the factory:
``broadcaster``, ``listener`` (``TransformListener``, ``TransformSubscriber``), ``clock``
(``ClockPublisher``, ``SimClock``) and ``topics`` (typed topics: a ``TopicSpec``, CDR bytes
on every bus). What every bus shares: ``fill`` (a listener's inserts and counts),
``static_set``, ``bridge``, ``counters``, ``lifetime``, ``frame_ids`` (the leading-slash
rule), ``hints`` (what to say when nothing was heard), ``address``, and ``wire``
(the msgpack format shared with the buffer server). ``yaml_files`` reads the YAML files of
the commands and the fleet within bounds.
"""

"""One transport interface, and the factory that picks a bus by its address's scheme.

A *bus* is where transforms travel: tf2py's own ZeroMQ core (``tcp://HOST:PORT``), a ROS 2
graph over DDS (``ros2://[DOMAIN_ID]``), a Zenoh network (``zenoh://...``). Each lives in a
sibling package of this one (``tf2py.transport.zmq``, ``.ros2``, ``.zenoh``) and implements
``Transport`` below. The public classes (``TransformBroadcaster``,
``StaticTransformBroadcaster``, ``TransformListener``, ``TransformSubscriber``, ``SimClock``,
``ClockPublisher``) ask ``transport_for(core)`` for the bus of their address and let it build
the object; nothing in this module imports a bus package until an address names it.

The one scheme registry: each ``register_scheme`` line below names, for one scheme, the bus
package (``module``, defining ``transport``, an instance of a ``Transport`` subclass), its pip
``extra``, an ``example`` address for messages, and the buffer server's link module
(``server_link``, by name: this layer never imports the server). A scheme may have only a link
(``ipc://``, ``inproc://``: ZeroMQ endpoints for the buffer server, no bus). The bus module must
import without its extra installed; its methods may import the extra and, when it is missing,
raise ``ImportError`` with one line naming the extra (``missing_extra_error`` words it), as
does the factory when the module itself fails to import. Whatever differs between buses is a
``Transport`` attribute or method (how it names itself, what to say when nothing is heard,
whether keys apply, whether it can host a fleet, ...), so nothing outside the bus packages
branches on a scheme (``tests/transport/contract/test_no_scheme_branches.py``).

What every bus object promises (the contract the public classes document):

- **Threads and callbacks.** Constructors return once the object is usable; they never wait
  for a peer (a bus that is not up yet is joined when it comes). Receiving happens on threads
  the bus owns (named daemon threads); callbacks (``on_batch``, a clock's jump callbacks) run
  on such a thread, one call at a time per object, and an exception a callback raises is
  counted in ``stats()["dropped"]["error"]`` (``"callback"`` for clocks), logged once per
  cause, and never stops the thread. Sending never blocks on the network: what cannot be
  queued is dropped (``/tf`` is best-effort, as in ROS).
- **Statics and late joiners.** A static broadcaster keeps the latest transform per child
  frame (its *set*) and publishes the whole set on every ``send_transform``. The bus makes the
  set *latched per publisher* (ROS 2's transient-local durability): a receiver that starts
  later, even much later, is given every live publisher's current set on ``/tf_static``
  (``TransformBatch.is_static``); a publisher that closed, or whose process died, stops being
  given to new receivers within 5 s; receivers that already hold its statics keep them.
- **Stats.** Receivers' ``stats()`` returns at least ``{"received_messages": int,
  "received_transforms": int, "dropped": {cause: count}}``; a listener adds
  ``"stored_transforms"`` and ``"old_transforms"``, and counts a message only once it has
  handed it to the buffer (whoever reads the count can look up what it counted). Every
  message or transform dropped is counted under a short cause word (``garbage``, ``shape``,
  ``version``, ``too_large``, ``topic``, ``invalid``, ``error``, ``gap``, ...) and the first
  drop of each cause is logged (``tf2py.transport.counters.DropCounter`` does this).
  Clocks: ``{"ticks", "jumps", "dropped"}``. Broadcasters count ``sent_messages``/``sent_transforms`` (static:
  ``published``) as attributes.
- **Errors.** A malformed address raises ``ValueError`` with one line naming it (from
  ``check_address``, before anything is opened); a missing extra ``ImportError`` (one line);
  ``send_transform`` on a closed object ``RuntimeError``; a wrong-typed argument
  ``TypeError``; bad input from the network is dropped and counted, never raised.
- **Closing.** ``close()`` is idempotent, ends the object's threads and releases its sockets
  (or its share of a shared session); every object is a context manager. An object dropped
  without ``close()`` releases them when it is collected and warns once with
  ``ResourceWarning``, as an unclosed file does.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from .address import DEFAULT_SERVER_ADDRESS, core_address

if TYPE_CHECKING:
    from ..buffer.time import Time
    from .listener import TransformBatch
    from .topics import TopicSpec

__all__ = [
    "Transport",
    "TransformSender",
    "TransformReceiver",
    "ClockSender",
    "ClockReceiver",
    "TopicSender",
    "TopicReceiver",
    "SchemeEntry",
    "register_scheme",
    "registered_schemes",
    "scheme_entry",
    "server_link_module",
    "transport_for",
    "transports",
    "scheme",
    "check_core_address",
    "missing_extra_error",
]


# -- what the objects a bus builds look like --------------------------------------------------


@runtime_checkable
class TransformSender(Protocol):
    """A broadcaster (``/tf``) or static broadcaster (``/tf_static``) of one bus."""

    authority: str

    def send_transform(self, transform: Any) -> None:
        """Send a ``TransformStamped`` or a list of them (one message for the list). A static
        broadcaster latches them (latest per child frame) and publishes its whole set. Never
        blocks; raises TypeError for anything but transforms, RuntimeError once closed.
        A sender may also offer ``send_columns(parents, children, stamps_ns, values)`` (the
        columns of a ``TransformBatch``'s ``Transforms``), which the bridge uses when present."""
        ...

    def close(self) -> None:
        """Release the sockets and threads (idempotent); a static sender says goodbye, so its
        set stops being given to late joiners."""
        ...


@runtime_checkable
class TransformReceiver(Protocol):
    """A listener (fills a buffer) or subscriber (calls ``on_batch``) of one bus: hears
    ``/tf`` and ``/tf_static``, the latched statics of every live publisher included."""

    def stats(self) -> dict[str, Any]:
        """``received_messages``, ``received_transforms``, ``dropped`` ({cause: count}); a
        listener adds ``stored_transforms`` and ``old_transforms``."""
        ...

    def close(self) -> None:
        """Stop the receive thread(s) and release the sockets (idempotent)."""
        ...


@runtime_checkable
class ClockSender(Protocol):
    """Publishes simulated time on the bus's ``/clock`` stream. Never blocks."""

    def publish(self, time: Any) -> None:
        """Send ``time`` (a Time or seconds) as the current simulated time."""
        ...

    def publish_ns(self, time_ns: int) -> None:
        """Send ``time_ns`` (integer nanoseconds) as the current simulated time."""
        ...

    def close(self) -> None:
        """Release the sockets (idempotent)."""
        ...


@runtime_checkable
class ClockReceiver(Protocol):
    """Follows the bus's ``/clock`` stream (what ``SimClock`` is)."""

    def now(self) -> Time:
        """The latest simulated time received (``Time()`` before the first tick)."""
        ...

    def wait_for_time(self, timeout: float | None = None) -> bool:
        """Wait until a first tick arrived (True) or ``timeout`` seconds passed (False)."""
        ...

    def add_jump_callback(self, fn: Callable[[Any], None]) -> None:
        """Call ``fn(jump)`` (a ``TimeJump``) whenever the time goes backwards."""
        ...

    def remove_jump_callback(self, fn: Callable[[Any], None]) -> None:
        """Stop calling ``fn`` (no error if it was not registered)."""
        ...

    def stats(self) -> dict[str, Any]:
        """``ticks``, ``jumps``, ``dropped`` ({cause: count})."""
        ...

    def close(self) -> None:
        """Stop the thread and release the sockets (idempotent)."""
        ...


@runtime_checkable
class TopicSender(Protocol):
    """Publishes one typed topic (``topics.TopicSpec``): CDR payloads. Never blocks."""

    @property
    def sent_messages(self) -> int:
        """Messages the bus took so far."""
        ...

    def publish(self, data: bytes) -> None:
        """Send one message: its CDR bytes, encapsulation header included. ValueError when
        the bus cannot carry it (too large), RuntimeError once closed."""
        ...

    def close(self) -> None:
        """Release the sockets (idempotent); a transient-local topic stops being given to
        late joiners."""
        ...


@runtime_checkable
class TopicReceiver(Protocol):
    """Hears one typed topic: ``on_message(cdr_bytes)`` on the bus's receive thread."""

    def stats(self) -> dict[str, Any]:
        """``received_messages``, ``dropped`` ({cause: count})."""
        ...

    def close(self) -> None:
        """Stop receiving and release the sockets (idempotent)."""
        ...


# -- what a bus must do ------------------------------------------------------------------------


class Transport(ABC):
    """One bus kind (one or more address schemes). Subclasses build the objects below for an
    address of their scheme; ``address`` is always the full address string (already resolved
    from ``$TF2PY_CORE`` by the caller), ``keys`` the caller's ``keys=`` argument unresolved
    (None: the bus decides, e.g. ``$TF2PY_KEYS``; a bus that cannot use keys raises
    ValueError when given some)."""

    #: The schemes this transport serves, e.g. ("tcp",). For messages only.
    schemes: tuple[str, ...] = ()
    #: Whether ``topic_publisher`` keeps a transient-local topic for late joiners (ROS 2 and
    #: Zenoh do; tf2py's own core latches only /tf_static).
    transient_local_topics: bool = False
    #: How messages name a bus of this kind ("the core at tcp://...").
    bus_kind: str = "the bus"
    #: Whether a subscriber of this process hears this process's own latched statics (how
    #: commands check that the bus is up); ROS 2's DDS does not deliver a node's own samples.
    echoes_own_statics: bool = True
    #: Whether ``tf2py fleet`` can run on this bus (one subscriber for every namespace, and
    #: the presence of robots).
    hosts_fleet: bool = False

    def refuse_keys(self, keys: Any, flag: str = "keys=") -> None:
        """ValueError (one line naming ``flag``) if ``keys`` were given and this bus cannot
        use them; nothing otherwise (the default: the bus uses keys)."""

    def same_bus(self, a: str, b: str) -> bool:
        """Whether the checked addresses ``a`` and ``b`` of this bus name the same bus."""
        return a.strip() == b.strip()

    def reachable(self, address: str) -> bool:
        """Whether something answers at ``address`` now (a quick check for commands); a bus
        with no server to ask gives the benefit of the doubt: True."""
        return True

    def no_data_hint(self, address: str, broadcasting: bool = True, probe: bool = False) -> str:
        """What to check when nothing was heard on the bus at ``address`` (a question for
        a one-line message). ``broadcasting``: also ask whether anything broadcasts;
        ``probe``: the bus may try the network to find out more (slower; for commands)."""
        return "is anything broadcasting there?" if broadcasting else "is the bus up there?"

    @abstractmethod
    def check_address(self, address: str) -> str:
        """``address`` if usable (normalised if need be), else ValueError with one line
        naming it and saying what is expected. Opens nothing and needs no extra."""

    @abstractmethod
    def transform_broadcaster(self, address: str, authority: str | None,
                              keys: Any = None) -> TransformSender:
        """A ``/tf`` sender: each ``send_transform`` goes out as one message (the bus may split
        a long list into several messages of whole transforms). Not latched: what is sent
        while nobody listens is lost."""

    @abstractmethod
    def static_transform_broadcaster(self, address: str, authority: str | None,
                                     keys: Any = None) -> TransformSender:
        """A ``/tf_static`` sender whose set the bus latches per publisher (see the module
        docstring: late joiners get it, it expires within 5 s of the publisher going)."""

    @abstractmethod
    def transform_subscriber(self, address: str, on_batch: Callable[[TransformBatch], None],
                             keys: Any = None) -> TransformReceiver:
        """Call ``on_batch(batch)`` (a ``TransformBatch``: authority, is_static, received_ns,
        transforms) for every message on ``/tf`` and ``/tf_static``, on the bus's receive thread,
        the latched statics of every live publisher included when it starts."""

    def transform_listener(self, buffer: Any, address: str,
                           keys: Any = None) -> TransformReceiver:
        """Fill ``buffer`` from ``/tf`` and ``/tf_static``: one insertion call per message,
        with the sender's authority, invalid transforms dropped and counted as
        ``"invalid"``. The default builds it on ``transform_subscriber``; a bus may override
        it with a faster path."""
        from .fill import SubscriberListener

        return SubscriberListener(self, buffer, address, keys)

    def bridge_side(self, address: str, authority: str, keys: Any = None) -> Any:
        """This bus as ``tf2py bridge`` uses it: a ``bridge.BusSide`` (``subscribe(on_batch)``,
        ``broadcaster()``, ``static_broadcaster()``, ``send(batch)``, ``close()``) whose
        senders carry ``authority``. The bridge drops what it hears with its own authority;
        a bus whose messages carry no authority (ROS 2) overrides this with a side that does
        not hear its own senders."""
        from .bridge import BusSide

        return BusSide(self, address, authority, keys)

    def topic_publisher(self, address: str, topic: TopicSpec,
                        keys: Any = None) -> TopicSender:
        """A publisher of ``topic`` (a ``topics.TopicSpec``: name, ROS type, type hash,
        QoS) whose ``publish(data)`` sends CDR bytes. A bus that carries no typed topics
        raises NotImplementedError."""
        raise NotImplementedError(f"{'/'.join(self.schemes) or 'this bus'} carries no "
                                  f"topic {topic.name}")

    def topic_subscriber(self, address: str, topic: TopicSpec,
                         on_message: Callable[[bytes], None],
                         keys: Any = None) -> TopicReceiver:
        """Call ``on_message(data)`` (CDR bytes) for every message on ``topic``, on the
        bus's receive thread (transient-local: the kept messages of live publishers too,
        where ``transient_local_topics``). An exception the callback raises is counted in
        ``stats()["dropped"]["error"]``; malformed input is dropped and counted."""
        raise NotImplementedError(f"{'/'.join(self.schemes) or 'this bus'} carries no "
                                  f"topic {topic.name}")

    @abstractmethod
    def clock_publisher(self, address: str, keys: Any = None) -> ClockSender:
        """A ``/clock`` sender."""

    @abstractmethod
    def sim_clock(self, address: str, keys: Any = None) -> ClockReceiver:
        """A follower of ``/clock``."""


# -- the factory -----------------------------------------------------------------------------


class SchemeEntry(NamedTuple):
    """What the registry knows of one scheme (see the module docstring)."""

    #: The bus package (defines ``transport``); "" for a scheme with only a server link.
    module: str
    #: The pip extra the bus needs ("" for none).
    extra: str
    #: An address of this scheme, for messages.
    example: str
    #: The buffer server's link module for this scheme (defines ``open_server_link``,
    #: ``open_client_link`` and ``check_address``); "" for none.
    server_link: str


_SCHEMES: dict[str, SchemeEntry] = {}
#: The scheme of addresses whose scheme is not registered (its check_address words the
#: error): the first registered with ``default=True``.
_default: list[str] = []


def register_scheme(scheme_name: str, module: str = "", extra: str = "", *, example: str = "",
                    server_link: str = "", default: bool = False) -> None:
    """Serve ``scheme_name://`` addresses with ``module.transport`` (imported on first use)
    and, for the buffer server, with the link module ``server_link``; ``extra`` names the pip
    extra the bus needs, ``example`` an address for messages; ``default``: addresses with no
    registered scheme go to this bus."""
    if not scheme_name.isidentifier() and not scheme_name.replace("+", "").isalnum():
        raise ValueError(f"invalid scheme {scheme_name!r}")
    name = scheme_name.lower()
    _SCHEMES[name] = SchemeEntry(module, extra, example or f"{name}://...", server_link)
    if default and module and not _default:
        _default.append(name)


def registered_schemes() -> list[str]:
    """The schemes of buses the factory knows, sorted."""
    return sorted(name for name, entry in _SCHEMES.items() if entry.module)


register_scheme("tcp", "tf2py.transport.zmq", example="tcp://127.0.0.1:7400",
                server_link="tf2py.server.zmq_link", default=True)
register_scheme("ipc", server_link="tf2py.server.zmq_link", example="ipc:///tmp/tf2py-server")
register_scheme("inproc", server_link="tf2py.server.zmq_link", example="inproc://tf2py-server")
register_scheme("ros2", "tf2py.transport.ros2", extra="ros2", example="ros2:// or ros2://42")
register_scheme("zenoh", "tf2py.transport.zenoh", extra="zenoh",
                example="zenoh://tcp/127.0.0.1:7447", server_link="tf2py.server.zenoh_link")


def missing_extra_error(scheme_name: str, extra: str) -> ImportError:
    """The one-line ImportError for a bus whose extra is not installed."""
    return ImportError(f"{scheme_name}:// needs the {extra} extra: "
                       f"pip install 'tf2py[{extra}]'")


def _named_scheme(address: str) -> str:
    """The registered scheme ``address`` starts with (``NAME://``), else ""."""
    head, sep, _ = address.strip().partition("://")
    name = head.lower()
    return name if sep and name in _SCHEMES else ""


def _scheme_of(address: str, strict: bool = False) -> str:
    """The scheme of the bus at ``address``, else the default's; ``strict``: ValueError for a
    known scheme misspelled (``zenoh:/...``) rather than the default's complaint."""
    name = _named_scheme(address)
    if name and _SCHEMES[name].module:
        return name
    if strict:
        _refuse_misspelled_scheme(address)
    return _default[0]


def _refuse_misspelled_scheme(address: str, what: str = "address") -> None:
    """ValueError naming the scheme meant, for ``zenoh:/tcp/...``, ``ros2:`` and the like (a
    known scheme's name and a colon without its two slashes)."""
    head, colon, _ = address.strip().partition(":")
    name = head.lower()
    if colon and name in _SCHEMES and not address.strip()[len(head):].startswith("://"):
        raise ValueError(f"invalid {what} {address!r}: a {name} address starts with "
                         f"{name}:// (e.g. {_SCHEMES[name].example})")


def scheme_entry(scheme_name: str) -> SchemeEntry:
    """The registry's entry for ``scheme_name`` (KeyError if it is not registered)."""
    return _SCHEMES[scheme_name.lower()]


def server_link_module(address: str) -> tuple[str, str]:
    """``(scheme, link module name)`` of a buffer server address; ValueError (one line) for
    a scheme that has no server link."""
    _refuse_misspelled_scheme(address, "buffer server address")
    name = _named_scheme(address)
    if not name or not _SCHEMES[name].server_link:
        linked = [n for n, entry in _SCHEMES.items() if entry.server_link]
        known = ", ".join(f"{n}://" for n in linked)
        raise ValueError(f"invalid buffer server address {address!r}: expected one of {known} "
                         f"(e.g. {DEFAULT_SERVER_ADDRESS})")
    return name, _SCHEMES[name].server_link


def _load(name: str) -> Transport:
    """The ``transport`` of scheme ``name``'s bus package; ImportError naming its extra when
    the package fails to import for want of it."""
    module_name, extra = _SCHEMES[name].module, _SCHEMES[name].extra
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if extra and not (exc.name or "").startswith(module_name):
            raise missing_extra_error(name, extra) from None
        raise
    transport = getattr(module, "transport", None)
    if not isinstance(transport, Transport):
        raise ImportError(f"{module_name} does not define a tf2py transport for {name}://")
    return transport


def transport_for(core: Any = None) -> tuple[Transport, str]:
    """``(transport, address)`` for the bus address ``core`` (a string, a running ``Core``,
    or None: ``$TF2PY_CORE``, else the default). The address is checked by the transport
    (ValueError, one line); a bus package that fails to import gives ImportError naming its
    extra."""
    address = core_address(core)
    transport = _load(_scheme_of(address, strict=True))
    return transport, transport.check_address(address)


def transports() -> list[tuple[str, Transport]]:
    """``(scheme, transport)`` of every registered bus whose package imports here."""
    found = []
    for name in registered_schemes():
        try:
            found.append((name, _load(name)))
        except ImportError:
            continue
    return found


def scheme(core: Any = None) -> str:
    """The registered scheme of the bus at ``core`` (None: $TF2PY_CORE, else the default),
    e.g. ``"tcp"``, ``"ros2"``; an address with no registered scheme gives the default's."""
    return _scheme_of(core_address(core))


def check_core_address(core: Any = None) -> str:
    """The bus address if it is usable, else ValueError naming it (``tcp://HOST:PORT``,
    ``ros2://[DOMAIN_ID]``, ``zenoh://...``). Imports the bus package, not its extra."""
    address = core_address(core)
    transport = _load(_scheme_of(address, strict=True))
    return transport.check_address(address)

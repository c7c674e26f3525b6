"""A stranger posing as a buffer server: a ZeroMQ ROUTER on a free loopback port that answers
every goal with a transform between frames of its own choosing (the client must refuse it)."""

from __future__ import annotations

import threading

import zmq

from tf2py import make_transform
from tf2py.server import protocol
from tf2py.transport.wire import pack, transform_to_wire, unpack


class ForgingServer:
    """Answers every goal with ``parent`` -> ``child`` at x = 666 m, stamped as asked."""

    def __init__(self, parent: str = "evil_parent", child: str = "evil_child") -> None:
        self.context = zmq.Context()
        self.router = self.context.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.address = f"tcp://127.0.0.1:{port}"
        self.parent, self.child = parent, child
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        while not self.stop.is_set():
            if not poller.poll(50):
                continue
            identity, data = self.router.recv_multipart()
            message = unpack(data)
            if message[1] != "goal":
                continue  # cancels
            forged = make_transform(self.parent, self.child, (666, 0, 0), stamp=message[5] / 1e9)
            self.router.send_multipart([identity, pack(
                [protocol.PROTOCOL_VERSION, "result", message[2], 0, "", "",
                 transform_to_wire(forged)])])

    def close(self) -> None:
        """Stops the thread, closes the socket and its context."""
        self.stop.set()
        self.thread.join()
        self.router.close(linger=0)
        self.context.term()

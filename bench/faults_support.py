"""Helpers of bench/faults.py (the buffer server's and the tools' fault campaign): the 100 Hz
stream, a result row, and raw DEALER sockets on the server's protocol. Processes, /proc and
percentiles: bench.harness."""

from __future__ import annotations

import threading
import time

import zmq

from tf2py import TransformBroadcaster, make_transform
from tf2py.server import protocol


class Stream:
    """map -> base (100 Hz, stamped with the wall clock), plus a static base -> laser; keeps
    every (stamp, wall time sent)."""

    def __init__(self, core):
        self.broadcaster = TransformBroadcaster(core=core)
        self.sent = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        k = 0
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            stamp = time.time()
            self.broadcaster.send_transform(
                make_transform("map", "base", (k * 0.01, 0, 0), stamp=stamp))
            self.sent.append((stamp, time.time()))
            k += 1
            next_t += 0.01
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()

    def close(self):
        self.stop_event.set()
        self.thread.join()
        self.broadcaster.close()


class Row:
    def __init__(self, name):
        self.name = name
        self.tried = 0
        self.crashes = 0
        self.lost = 0
        self.note = ""


def dealer(address):
    ctx = zmq.Context.instance()
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.setsockopt(zmq.RCVTIMEO, 20_000)
    d.connect(address)
    return d


def results(sock, count):
    out = []
    while len(out) < count:
        message = protocol.parse_server_message(sock.recv())
        if message[0] == "result":
            out.append(message)
    return out

"""`tf2py foxglove` benchmark: what the live Foxglove server forwards, its CPU, and the latency
from send_transform to a WebSocket client, against a plain listener on the same stream.

    python -m bench foxglove_view            # ~30 s
    python -m bench foxglove_view --seconds 10

Processes: `tf2py core`; `tf2py foxglove --port 0` (the server under test); a peer listener
process (a TransformListener filling a Buffer: the cost of any listener of the same stream);
a broadcaster process at 1 kHz x 20 frames, stamping each message with time.time_ns() just
before send_transform. A Foxglove protocol client process (asyncio websockets, subprotocol
foxglove.sdk.v1) records the arrival time of each binary message frame and decodes the
FrameTransforms afterwards. Two shapes of the same 20 000 transforms/s:
  batched  one message of 20 transforms per ms (robot_state_publisher style)
  single   20 messages of 1 transform per ms (20 000 messages/s)
Reported: messages and transforms per second received by the client, loss (client and
server counts), CPU of the server and of the peer listener (ratio), latency p50/p99 from
send_transform to the client, and to the peer listener's Buffer in the same run.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from bench.harness import PY, Child, Run, cpu_seconds, load_average, percentile, start_core, version_of
from bench.transport import _spawn
from simulators.bus_processes import BROADCASTER

# A peer listener process: a TransformListener into a Buffer, recording send->insert latency.
PEER = r"""
import sys, time
from tf2py.buffer.buffer import Buffer
from tf2py.transport.listener import TransformListener
latencies = []
class Stamping(Buffer):
    def set_transforms(self, parents, children, stamps_ns, *a, **k):
        r = super().set_transforms(parents, children, stamps_ns, *a, **k)
        latencies.append(time.time_ns() - int(stamps_ns[0]))
        return r
    def set_transform_values(self, parent, child, stamp_ns, *a, **k):
        r = super().set_transform_values(parent, child, stamp_ns, *a, **k)
        latencies.append(time.time_ns() - stamp_ns)
        return r
listener = TransformListener(Stamping(cache_time=1e6), sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
c0, n0 = time.process_time(), listener.received_transforms
del latencies[:]
sys.stdin.readline()
c1, n1 = time.process_time(), listener.received_transforms
import json
print("cpu", json.dumps([c1 - c0, n1 - n0, latencies]), flush=True)
listener.close()
"""

# The Foxglove protocol client, in a process of its own (asyncio websockets): subscribes to
# /tf, records each binary frame's arrival time, and after 1.5 s without data decodes them
# and prints the counts and the send -> arrival latencies.
CLIENT = r"""
import asyncio, json, struct, sys, time
import websockets
from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
HEADER = struct.Struct("<BIQ")
async def main(url):
    async with websockets.connect(url, subprotocols=["foxglove.sdk.v1"], max_queue=None) as ws:
        while True:
            message = json.loads(await ws.recv())
            if message["op"] == "advertise":
                channel = next(c for c in message["channels"] if c["topic"] == "/tf")
                break
        await ws.send(json.dumps({"op": "subscribe",
                                  "subscriptions": [{"id": 1, "channelId": channel["id"]}]}))
        print("ready", flush=True)
        frames = []
        timeout = 60.0
        try:
            while True:
                frame = await asyncio.wait_for(ws.recv(), timeout)
                if isinstance(frame, bytes):
                    frames.append((time.time_ns(), frame))
                    timeout = 1.5
        except asyncio.TimeoutError:
            pass
    latencies, hops, transforms = [], [], 0
    for arrived, frame in frames:
        _, _, received = HEADER.unpack_from(frame)  # log time: when the server got it
        m = FrameTransforms.FromString(frame[HEADER.size:])
        transforms += len(m.transforms)
        stamp = m.transforms[0].timestamp
        latencies.append(arrived - (stamp.seconds * 1_000_000_000 + stamp.nanos))
        hops.append(arrived - received)
    print("result", json.dumps([len(frames), transforms, latencies, hops]), flush=True)
asyncio.run(main(sys.argv[1]))
"""


def run_shape(core_address, url, server_pid, batch, per_ms, seconds):
    messages = int(seconds * 1000 * per_ms)
    rate = 1000 * per_ms
    peer = _spawn([PY, "-c", PEER, core_address])
    sender = _spawn([PY, "-c", BROADCASTER, core_address, "0", str(messages), str(batch),
                    str(rate), "now"])
    client = _spawn([PY, "-c", CLIENT, url])
    try:
        peer.wait_line("ready")
        sender.wait_line("ready")
        client.wait_line("ready")
        time.sleep(0.3)
        peer.tell()
        server0 = cpu_seconds(server_pid)
        client0 = cpu_seconds(client.pid)
        t0 = time.perf_counter()
        sender.tell()
        done = sender.wait_line("done", timeout=seconds + 60)
        sent_seconds = float(done.split()[1])
        time.sleep(0.5)  # let the tail arrive
        server_cpu = cpu_seconds(server_pid) - server0
        client_cpu = cpu_seconds(client.pid) - client0
        elapsed = time.perf_counter() - t0
        peer.tell()
        peer_line = peer.wait_line("cpu")
        client_line = client.wait_line("result", timeout=120)
    finally:
        client.stop()
        sender.stop()
        peer.stop()
    peer_cpu, peer_received, peer_latencies = json.loads(peer_line.split(" ", 1)[1])
    messages_received, received, latencies, hops = json.loads(client_line.split(" ", 1)[1])
    hop = np.array(hops) / 1e3
    expected = messages * batch
    lat = np.array(latencies) / 1e3
    peer_lat = np.array(peer_latencies) / 1e3
    return dict(
        shape=f"{per_ms} x {batch}", expected=expected, messages=messages_received,
        received=received, loss=1 - received / expected, sent_seconds=sent_seconds,
        messages_per_s=messages_received / sent_seconds, per_s=received / sent_seconds,
        server_cpu=server_cpu / elapsed, peer_cpu=peer_cpu / elapsed,
        client_cpu=client_cpu / elapsed,
        peer_received=peer_received, p50=percentile(lat, 50), p99=percentile(lat, 99),
        peer_p50=percentile(peer_lat, 50), peer_p99=percentile(peer_lat, 99),
        hop_p50=percentile(hop, 50), hop_p99=percentile(hop, 99))


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench foxglove_view",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0 if run.quick else 5.0,
                        help="length of each run")
    args = parser.parse_args(argv)
    run.peer("foxglove-sdk", version_of("foxglove-sdk"))
    core = start_core()
    server = Child([PY, "-m", "tf2py.cli.main", "foxglove", "--core", core.address, "--port", "0"],
                   ready=" on ws://")
    url = "ws://" + server.address
    try:
        table = run.table(f"tf2py foxglove: 1 kHz x 20 frames = 20 000 transforms/s, "
                          f"{args.seconds:g} s per shape (load average {load_average()})",
                          ["shape", "messages/s", "transforms/s", "loss", "server CPU",
                           "vs listener", "p50 µs", "p99 µs", "server->client p50 µs"],
                          [14, 11, 13, 7, 11, 12, 8, 9, 22])
        for batch, per_ms, name in ((20, 1, "batched"), (1, 20, "single")):
            r = run_shape(core.address, url, server.pid, batch, per_ms, args.seconds)
            table.add(f"{name} {r['shape']}/ms", f"{r['messages_per_s']:,.0f}", f"{r['per_s']:,.0f}",
                      f"{r['loss']:.2%}", f"{r['server_cpu']:.1%}",
                      f"{r['server_cpu'] / max(r['peer_cpu'], 1e-9):.2f}x", f"{r['p50']:.0f}",
                      f"{r['p99']:.0f}", f"{r['hop_p50']:.0f}",
                      **{k: v for k, v in r.items() if k != "shape"})
            run.note(f"{name}: peer listener got {r['peer_received']:,}, CPU {r['peer_cpu']:.1%}, "
                     f"p50 {r['peer_p50']:.1f} us, p99 {r['peer_p99']:.1f} us; Python WebSocket "
                     f"client CPU {r['client_cpu']:.1%}")
    finally:
        server.stop(grace=15)
        print("   server:", server.lines[-1] if server.lines else "(no output)")
        core.stop()

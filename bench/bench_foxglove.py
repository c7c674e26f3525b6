"""`tf2py foxglove` benchmark: what the live Foxglove server forwards, its CPU, and the latency
from send_transform to a WebSocket client, against a plain listener on the same stream.

    .venv/bin/python bench/bench_foxglove.py            # ~30 s
    .venv/bin/python bench/bench_foxglove.py --seconds 10

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
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench_transport import (  # noqa: E402
    BROADCASTER,
    PY,
    expect,
    load_note,
    percentile,
    proc_cpu_seconds,
    spawn,
    start_core,
    stop,
    tell,
)

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
    peer = spawn([PY, "-c", PEER, core_address])
    sender = spawn([PY, "-c", BROADCASTER, core_address, "0", str(messages), str(batch),
                    str(rate), "now"])
    client = spawn([PY, "-c", CLIENT, url])
    try:
        expect(peer, "ready")
        expect(sender, "ready")
        expect(client, "ready")
        time.sleep(0.3)
        tell(peer)
        server0 = proc_cpu_seconds(server_pid)
        client0 = proc_cpu_seconds(client.pid)
        t0 = time.perf_counter()
        tell(sender)
        done = expect(sender, "done", timeout=seconds + 60)
        sent_seconds = float(done.split()[1])
        time.sleep(0.5)  # let the tail arrive
        server_cpu = proc_cpu_seconds(server_pid) - server0
        client_cpu = proc_cpu_seconds(client.pid) - client0
        elapsed = time.perf_counter() - t0
        tell(peer)
        peer_line = expect(peer, "cpu")
        client_line = expect(client, "result", timeout=120)
    finally:
        stop(client)
        stop(sender)
        stop(peer)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each run")
    args = parser.parse_args()
    core, core_address = start_core()
    server = spawn([PY, "-m", "tf2py.cli.main", "foxglove", "--core", core_address,
                    "--port", "0"], stdin=False)
    try:
        url = None
        while url is None:
            line = server.stdout.readline()
            if not line:
                raise RuntimeError("tf2py foxglove ended before it was ready")
            match = re.search(r" on (ws://\S+)$", line.strip())
            if match:
                url = match.group(1)
        print(f"== tf2py foxglove: 1 kHz x 20 frames = 20 000 transforms/s, {args.seconds:g} s "
              f"per shape ({load_note()})")
        for batch, per_ms, name in ((20, 1, "batched"), (1, 20, "single ")):
            r = run_shape(core_address, url, server.pid, batch, per_ms, args.seconds)
            print(f"   {name} ({r['shape']:>6}/ms): client got {r['messages_per_s']:>7,.0f} "
                  f"messages/s, {r['per_s']:>7,.0f} transforms/s, loss {r['loss']:6.2%} "
                  f"({r['received']:,}/{r['expected']:,}; peer listener "
                  f"{r['peer_received']:,})")
            print(f"      CPU: server {r['server_cpu']:6.1%}, peer listener "
                  f"{r['peer_cpu']:6.1%} (ratio {r['server_cpu'] / max(r['peer_cpu'], 1e-9):.2f}); "
                  f"Python WebSocket client {r['client_cpu']:6.1%}")
            print(f"      latency send_transform -> WebSocket client: p50 {r['p50']:7.1f} us, "
                  f"p99 {r['p99']:8.1f} us;  -> peer listener's Buffer: p50 "
                  f"{r['peer_p50']:6.1f} us, p99 {r['peer_p99']:7.1f} us")
            print(f"      of which server received -> client: p50 {r['hop_p50']:7.1f} us, "
                  f"p99 {r['hop_p99']:8.1f} us")
    finally:
        server.send_signal(2)
        try:
            tail = server.communicate(timeout=15)[0].strip().splitlines()
            print("   server:", tail[-1] if tail else "(no output)")
        except Exception:
            server.kill()
        core.send_signal(2)
        core.wait(10)


if __name__ == "__main__":
    main()

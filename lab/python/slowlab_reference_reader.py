"""A reference client written as the original experiment describes its own.

Slow readers: a socket with SO_RCVBUF set to 8 KiB before connect, handed
to asyncio.open_connection(sock=..., limit=16 KiB); the request; the head
read with readuntil; then the body with read(16 KiB) followed by a sleep
until the paced deadline of every body byte read so far (absolute, from the
connection's establishment). Meanwhile, on the same event loop, an
open-loop /fast client starts a request every 1/rate s for the duration,
beginning 250 ms after the readers, each on a new connection; latency runs
from the connect's start to the whole body.

Prints one JSON object: fast_requests, fast_ok, fast_p95_ms (nearest rank,
failures ranked last, as slowlab), receive_s (per slow reader, from the
connection's establishment to the paced consumption of the last byte),
first_read_bytes (per slow reader: what the transport's first recv
returned, head included, as slowlab's large-responses.csv records it),
loop_lag_us_median (the event loop's time from epoll_wait's return to a
slow reader's feed_data, that is to its transport's recv, the median over
every recv of the slow readers: what `slowlab load --loop-lag` models) and
the CPU time of this process.

The reader and writer are built as asyncio.open_connection builds them
(Lib/asyncio/streams.py), with a StreamReader whose feed_data also notes
the size of its first call: one recv of the transport, handed on whole.
The loop is asyncio's default on Linux, a SelectorEventLoop over an
EpollSelector, whose select() also notes the time it returned. The two
notes cost a time.monotonic() call each, under a microsecond against the
tens of microseconds they measure.

Used by harness/tests/reader_models.rs to check `slowlab load --reader
streamreader` against the thing it models. Standard library only.

usage: slowlab_reference_reader.py HOST PORT [--slow 2] [--rate BYTES_PER_S]
       [--fast-rate 8] [--fast-duration 9] [--rcvbuf 8192] [--limit 16384]
"""

import argparse
import asyncio
import json
import math
import os
import selectors
import socket
import statistics
import time


class TimedSelector(selectors.EpollSelector):
    """The EpollSelector that notes when each select() returned."""

    returned = 0.0

    def select(self, timeout=None):
        ready = super().select(timeout)
        TimedSelector.returned = time.monotonic()
        return ready


class FirstFeed(asyncio.StreamReader):
    """A StreamReader that remembers its first feed_data's size."""

    first = None
    # The loop's time from the selector's return to each feed_data, in s,
    # over every FirstFeed (the slow readers).
    lags = []

    def feed_data(self, data):
        FirstFeed.lags.append(time.monotonic() - TimedSelector.returned)
        if self.first is None and data:
            self.first = len(data)
        super().feed_data(data)


async def open_connection(sock, limit):
    """asyncio.open_connection(sock=sock, limit=limit), with FirstFeed."""
    loop = asyncio.get_running_loop()
    reader = FirstFeed(limit=limit, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer


async def slow_reader(host, port, args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, port))
    start = time.monotonic()
    reader, writer = await open_connection(sock, args.limit)
    writer.write(
        f"GET /large HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    got = 0
    while length is None or got < length:
        data = await reader.read(args.limit)
        if not data:
            break
        got += len(data)
        delay = start + got / args.rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
    end = time.monotonic()
    writer.close()
    return {
        "bytes": got,
        "length": length,
        "receive_s": end - start,
        "first_read_bytes": reader.first,
    }


async def fast_request(host, port):
    t = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(
            f"GET /fast HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 60)
        writer.close()
        ok = data.startswith(b"HTTP/1.1 200") and data.endswith(b'{"ok": true}')
        return (time.monotonic() - t) * 1000.0 if ok else None
    except OSError:
        return None


async def main(args):
    host, port = args.host, args.port
    t0 = time.monotonic()
    slow = [asyncio.create_task(slow_reader(host, port, args)) for _ in range(args.slow)]
    n = math.ceil(args.fast_duration * args.fast_rate - 1e-9)
    fast = []
    for i in range(n):
        at = t0 + 0.25 + i / args.fast_rate
        delay = at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        fast.append(asyncio.create_task(fast_request(host, port)))
    latencies = await asyncio.gather(*fast)
    downloads = await asyncio.gather(*slow)
    ranked = sorted(v if v is not None else math.inf for v in latencies)
    p95 = ranked[math.ceil(0.95 * len(ranked)) - 1] if ranked else None
    cpu = os.times()
    return {
        "fast_requests": len(latencies),
        "fast_ok": sum(v is not None for v in latencies),
        "fast_p95_ms": None if p95 is None or math.isinf(p95) else p95,
        "downloads": downloads,
        "receive_s": [d["receive_s"] for d in downloads],
        "first_read_bytes": [d["first_read_bytes"] for d in downloads],
        "loop_lag_us_median": statistics.median(FirstFeed.lags) * 1e6 if FirstFeed.lags else None,
        "cpu_s": cpu.user + cpu.system,
    }


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--slow", type=int, default=2)
    p.add_argument("--rate", type=float, default=2 * 1024 * 1024)
    p.add_argument("--fast-rate", type=float, default=8.0)
    p.add_argument("--fast-duration", type=float, default=9.0)
    p.add_argument("--rcvbuf", type=int, default=8192)
    p.add_argument("--limit", type=int, default=16384)
    args = p.parse_args()
    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(TimedSelector())) as runner:
        print(json.dumps(runner.run(main(args))))

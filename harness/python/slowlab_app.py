"""The experiment's framework-less WSGI app, byte-identical to `slowlab serve`.

Routes:
  GET /fast   200, application/json, body exactly {"ok": true} (12 bytes)
  GET /large  200, application/octet-stream, LARGE_BYTES bytes made of one
              BLOCK_BYTES block (byte i of the block is i % 256) yielded block
              by block, so the server writes one block per sendall()
  other path  404; other method on a known path: 405 with Allow: GET

The app sets no Connection header: PEP 3333 forbids hop-by-hop headers in
WSGI apps, and Gunicorn's sync worker adds `Connection: close` itself.

Environment:
  SLOWLAB_LARGE_BYTES  body size of /large (default 16 MiB)
  SLOWLAB_CHUNK_BYTES  block size (default 64 KiB)
  SLOWLAB_SEND_LOG     CSV file to append one row per /large response
                       (start_unix_s,start_s,app_send_s,bytes,worker,complete)

app_send_s runs from the start of the response iterable to the moment after
the server has written the last block: a WSGI server asks the iterable for
the next block only after it has written the previous one, and calls close()
after the last write (or after a failed one).
"""

import os
import threading
import time

LARGE_BYTES = int(os.environ.get("SLOWLAB_LARGE_BYTES", str(16 * 1024 * 1024)))
BLOCK_BYTES = int(os.environ.get("SLOWLAB_CHUNK_BYTES", str(64 * 1024)))
SEND_LOG = os.environ.get("SLOWLAB_SEND_LOG")

FAST_BODY = b'{"ok": true}'
BLOCK = (bytes(range(256)) * (BLOCK_BYTES // 256 + 1))[:BLOCK_BYTES]
NOT_FOUND = b"not found\n"
NOT_ALLOWED = b"method not allowed\n"
SEND_LOG_HEADER = "start_unix_s,start_s,app_send_s,bytes,worker,complete\n"

STARTED = time.monotonic()


def _append_row(row):
    """Appends one line with a single write(2), so that rows of concurrent
    workers and threads never interleave (O_APPEND writes of this size are
    atomic). The header is written only by whoever creates the file
    (O_EXCL), so two threads or processes can never both write it; the
    harness creates the file with its header before it starts Gunicorn."""
    try:
        fd = os.open(SEND_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        row = SEND_LOG_HEADER + row
    except FileExistsError:
        fd = os.open(SEND_LOG, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, row.encode())
    finally:
        os.close(fd)


class LargeBody:
    """The /large response iterable; times itself from first step to close()."""

    def __init__(self):
        self.started = None
        self.started_wall = None
        self.written = 0
        self.closed = False

    def __iter__(self):
        self.started = time.monotonic()
        self.started_wall = time.time()
        remaining = LARGE_BYTES
        while remaining > 0:
            n = min(BLOCK_BYTES, remaining)
            yield BLOCK if n == BLOCK_BYTES else BLOCK[:n]
            # Resumed: the server has written the block we yielded.
            self.written += n
            remaining -= n

    def close(self):
        if self.closed or self.started is None:
            return
        self.closed = True
        ended = time.monotonic()
        if not SEND_LOG:
            return
        complete = self.written == LARGE_BYTES
        app_send = f"{ended - self.started:.6f}" if complete else ""
        worker = f"pid{os.getpid()}/{threading.current_thread().name}"
        _append_row(
            f"{self.started_wall:.6f},{self.started - STARTED:.6f},{app_send},"
            f"{self.written},{worker},{'true' if complete else 'false'}\n"
        )


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    method = environ.get("REQUEST_METHOD", "")
    if path not in ("/fast", "/large"):
        start_response(
            "404 Not Found",
            [("Content-Type", "text/plain"), ("Content-Length", str(len(NOT_FOUND)))],
        )
        return [NOT_FOUND]
    if method != "GET":
        start_response(
            "405 Method Not Allowed",
            [
                ("Content-Type", "text/plain"),
                ("Content-Length", str(len(NOT_ALLOWED))),
                ("Allow", "GET"),
            ],
        )
        return [NOT_ALLOWED]
    if path == "/fast":
        start_response(
            "200 OK",
            [("Content-Type", "application/json"), ("Content-Length", str(len(FAST_BODY)))],
        )
        return [FAST_BODY]
    start_response(
        "200 OK",
        [
            ("Content-Type", "application/octet-stream"),
            ("Content-Length", str(LARGE_BYTES)),
            ("X-Slowlab-Block", str(BLOCK_BYTES)),
        ],
    )
    return LargeBody()

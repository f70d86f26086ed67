"""The experiment's framework-less WSGI app, byte-identical to `slowlab serve`.

Routes:
  GET /fast   200, application/json, body exactly {"ok": true} (12 bytes)
  GET /large  200, application/octet-stream, LARGE_BYTES bytes made of one
              BLOCK_BYTES block (byte i of the block is i % 256) yielded block
              by block, so the server writes one block per sendall()
  POST /upload reads the body in BLOCK_BYTES pieces (a sync worker is held
              while it reads), checks every byte against the pattern (block
              size from X-Slowlab-Block, else 64 KiB) and the length, and
              answers 200, application/json, {"bytes": N, "pattern_ok": true}
  other path  404; other method on a known path: 405 with Allow: GET
              (Allow: POST for /upload)

The app sets no Connection header: PEP 3333 forbids hop-by-hop headers in
WSGI apps, and Gunicorn's sync worker adds `Connection: close` itself.

Environment:
  SLOWLAB_LARGE_BYTES  body size of /large (default 16 MiB)
  SLOWLAB_CHUNK_BYTES  block size (default 64 KiB)
  SLOWLAB_SEND_LOG     CSV file to append one row per /large response
                       (start_unix_s,start_s,app_send_s,bytes,worker,complete)
  SLOWLAB_RECV_LOG     CSV file to append one row per POST /upload
                       (start_unix_s,start_s,app_recv_s,bytes,content_length,
                       pattern_ok,worker,complete); app_recv_s runs from the
                       call of the app (the head has been read) to the last
                       body byte read, empty unless the body was whole

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
RECV_LOG = os.environ.get("SLOWLAB_RECV_LOG")

FAST_BODY = b'{"ok": true}'
BLOCK = (bytes(range(256)) * (BLOCK_BYTES // 256 + 1))[:BLOCK_BYTES]
NOT_FOUND = b"not found\n"
NOT_ALLOWED = b"method not allowed\n"
SEND_LOG_HEADER = "start_unix_s,start_s,app_send_s,bytes,worker,complete\n"
RECV_LOG_HEADER = (
    "start_unix_s,start_s,app_recv_s,bytes,content_length,pattern_ok,worker,complete\n"
)
UPLOAD_PATH = "/upload"
DEFAULT_UPLOAD_BLOCK = 64 * 1024

STARTED = time.monotonic()


def _append_row(row, path=None, header=SEND_LOG_HEADER):
    """Appends one line with a single write(2), so that rows of concurrent
    workers and threads never interleave (O_APPEND writes of this size are
    atomic). The header is written only by whoever creates the file
    (O_EXCL), so two threads or processes can never both write it; the
    harness creates the file with its header before it starts Gunicorn."""
    path = path or SEND_LOG
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        row = header + row
    except FileExistsError:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
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
        worker = worker_name()
        _append_row(
            f"{self.started_wall:.6f},{self.started - STARTED:.6f},{app_send},"
            f"{self.written},{worker},{'true' if complete else 'false'}\n"
        )


def worker_name():
    return f"pid{os.getpid()}/{threading.current_thread().name}"


class Upload:
    """One POST /upload: checks the pieces as they are read and writes the
    receive-log row. Shared with the ASGI app."""

    def __init__(self, block_header, content_length):
        self.started = time.monotonic()
        self.started_wall = time.time()
        try:
            block = int(block_header or DEFAULT_UPLOAD_BLOCK)
        except ValueError:
            block = DEFAULT_UPLOAD_BLOCK
        self.block = block if block > 0 else DEFAULT_UPLOAD_BLOCK
        self.pattern = (bytes(range(256)) * (self.block // 256 + 1))[: self.block]
        self.content_length = content_length
        self.bytes = 0
        self.pattern_ok = True
        self.done = None

    def want(self, chunk):
        """How much to read next: at most `chunk`, never across a block."""
        n = min(chunk, self.block - self.bytes % self.block)
        if self.content_length is not None:
            n = min(n, self.content_length - self.bytes)
        return n

    def update(self, data):
        while data:
            at = self.bytes % self.block
            n = min(len(data), self.block - at)
            if self.pattern_ok and data[:n] != self.pattern[at : at + n]:
                self.pattern_ok = False
            self.bytes += n
            data = data[n:]

    def finish(self):
        self.done = time.monotonic()

    def complete(self):
        return self.done is not None and (
            self.content_length is None or self.content_length == self.bytes
        )

    def answer(self):
        ok = "true" if self.pattern_ok else "false"
        return f'{{"bytes": {self.bytes}, "pattern_ok": {ok}}}'.encode()

    def log(self):
        if not RECV_LOG:
            return
        complete = self.complete()
        recv = f"{self.done - self.started:.6f}" if complete else ""
        length = "" if self.content_length is None else str(self.content_length)
        _append_row(
            f"{self.started_wall:.6f},{self.started - STARTED:.6f},{recv},{self.bytes},"
            f"{length},{'true' if self.pattern_ok else 'false'},{worker_name()},"
            f"{'true' if complete else 'false'}\n",
            RECV_LOG,
            RECV_LOG_HEADER,
        )


def _content_length(raw):
    try:
        return int(raw) if raw not in (None, "") else None
    except ValueError:
        return None


def _upload(environ, start_response):
    length = _content_length(environ.get("CONTENT_LENGTH"))
    up = Upload(environ.get("HTTP_X_SLOWLAB_BLOCK"), length)
    stream = environ["wsgi.input"]
    try:
        while length is None or up.bytes < length:
            data = stream.read(up.want(BLOCK_BYTES) if length is not None else BLOCK_BYTES)
            if not data:
                break
            up.update(data)
        if up.content_length is None or up.bytes == up.content_length:
            up.finish()
    except Exception:
        # The client left mid-body (the server raises or returns short):
        # the row says incomplete.
        pass
    finally:
        up.log()
    if not up.complete():
        body = b"incomplete body\n"
        start_response(
            "400 Bad Request",
            [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))],
        )
        return [body]
    body = up.answer()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


def _not_allowed(start_response, allow):
    start_response(
        "405 Method Not Allowed",
        [
            ("Content-Type", "text/plain"),
            ("Content-Length", str(len(NOT_ALLOWED))),
            ("Allow", allow),
        ],
    )
    return [NOT_ALLOWED]


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    method = environ.get("REQUEST_METHOD", "")
    if path == UPLOAD_PATH:
        if method != "POST":
            return _not_allowed(start_response, "POST")
        return _upload(environ, start_response)
    if path not in ("/fast", "/large"):
        start_response(
            "404 Not Found",
            [("Content-Type", "text/plain"), ("Content-Length", str(len(NOT_FOUND)))],
        )
        return [NOT_FOUND]
    if method != "GET":
        return _not_allowed(start_response, "GET")
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

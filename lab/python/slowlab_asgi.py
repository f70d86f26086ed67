"""The ASGI twin of `slowlab_app.py`: the same routes with the same bytes.

Routes (as the WSGI app and `slowlab serve`):
  GET /fast   200, application/json, body exactly {"ok": true} (12 bytes)
  GET /large  200, application/octet-stream, LARGE_BYTES bytes made of one
              BLOCK_BYTES block (byte i of the block is i % 256), sent block
              by block, one `http.response.body` message per block
  POST /upload read message by message, verified and logged as the WSGI
              app does (its Upload class), the same JSON answer
  other path  404; other method on a known path: 405 with Allow: GET
              (Allow: POST for /upload)

Environment: SLOWLAB_LARGE_BYTES, SLOWLAB_CHUNK_BYTES, SLOWLAB_SEND_LOG and
SLOWLAB_RECV_LOG,
as for the WSGI app, whose constants and send-log writer this module shares.

app_send_s runs from the first body message to the moment the server's
`send` returned for the last one: an ASGI server (uvicorn) returns from
`send` once it has handed the bytes to its transport, and waits for the
transport to drain below its high-water mark before it takes the next
message, so the last return is the last chunk accepted by the server's
write. A client that leaves makes `send` raise or the server stop asking;
the row is then written with complete=false.
"""

import time

import slowlab_app as wsgi



def _headers(pairs):
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs]


async def _respond(send, status, headers, body):
    await send({"type": "http.response.start", "status": status, "headers": _headers(headers)})
    await send({"type": "http.response.body", "body": body})


async def _large(send):
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": _headers(
                [
                    ("Content-Type", "application/octet-stream"),
                    ("Content-Length", str(wsgi.LARGE_BYTES)),
                    ("X-Slowlab-Block", str(wsgi.BLOCK_BYTES)),
                ]
            ),
        }
    )
    started = time.monotonic()
    started_wall = time.time()
    written = 0
    remaining = wsgi.LARGE_BYTES
    try:
        while remaining > 0:
            n = min(wsgi.BLOCK_BYTES, remaining)
            block = wsgi.BLOCK if n == wsgi.BLOCK_BYTES else wsgi.BLOCK[:n]
            remaining -= n
            await send({"type": "http.response.body", "body": block, "more_body": remaining > 0})
            # Returned: the server has written the block we sent.
            written += n
    finally:
        ended = time.monotonic()
        if wsgi.SEND_LOG:
            complete = written == wsgi.LARGE_BYTES
            app_send = f"{ended - started:.6f}" if complete else ""
            worker = wsgi.worker_name()
            wsgi._append_row(
                f"{started_wall:.6f},{started - wsgi.STARTED:.6f},{app_send},"
                f"{written},{worker},{'true' if complete else 'false'}\n"
            )


async def _upload(scope, receive, send):
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    length = wsgi._content_length(headers.get("content-length"))
    up = wsgi.Upload(headers.get("x-slowlab-block"), length)
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            up.update(message.get("body", b""))
            if not message.get("more_body", False):
                if up.content_length is None or up.bytes == up.content_length:
                    up.finish()
                break
    finally:
        up.log()
    if not up.complete():
        body = b"incomplete body\n"
        await _respond(
            send,
            400,
            [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))],
            body,
        )
        return
    body = up.answer()
    await _respond(
        send,
        200,
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        body,
    )


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    path = scope.get("path", "")
    method = scope.get("method", "")
    if path == wsgi.UPLOAD_PATH and method == "POST":
        await _upload(scope, receive, send)
    elif path == wsgi.UPLOAD_PATH:
        await _respond(
            send,
            405,
            [
                ("Content-Type", "text/plain"),
                ("Content-Length", str(len(wsgi.NOT_ALLOWED))),
                ("Allow", "POST"),
            ],
            wsgi.NOT_ALLOWED,
        )
    elif path not in ("/fast", "/large"):
        await _respond(
            send,
            404,
            [("Content-Type", "text/plain"), ("Content-Length", str(len(wsgi.NOT_FOUND)))],
            wsgi.NOT_FOUND,
        )
    elif method != "GET":
        await _respond(
            send,
            405,
            [
                ("Content-Type", "text/plain"),
                ("Content-Length", str(len(wsgi.NOT_ALLOWED))),
                ("Allow", "GET"),
            ],
            wsgi.NOT_ALLOWED,
        )
    elif path == "/fast":
        await _respond(
            send,
            200,
            [("Content-Type", "application/json"), ("Content-Length", str(len(wsgi.FAST_BODY)))],
            wsgi.FAST_BODY,
        )
    else:
        await _large(send)

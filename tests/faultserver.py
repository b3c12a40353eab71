"""A local HTTP server that fails on purpose (fault injection for the ``openai:`` policy's tests).

It implements none of the OpenAI API: every POST gets the one canned fault it was started with (a status
and a body, or no answer at all), and the server counts the requests it got.  The tests use it for what a
closed port cannot show: an endpoint answering HTTP 500, 400 or 401, a 200 whose body is not JSON, one
that never answers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def failing_endpoint(status: int = 500, body: bytes = b"internal error", hang: bool = False,
                     echo_auth: bool = False) -> Iterator[tuple[str, list[str]]]:
    """``(base URL ending in /v1, the paths of the requests it got)`` while the block runs.

    ``hang``: read the request, then never answer (until the server stops); ``echo_auth``: put the
    request's Authorization header into the body (a server that repeats the key it was given).
    """
    got: list[str] = []
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got.append(self.path)
            if hang:
                release.wait(60)
                return
            data = body + (b" " + self.headers.get("Authorization", "").encode() if echo_auth else b"")
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", got
    finally:
        release.set()
        server.shutdown()
        server.server_close()

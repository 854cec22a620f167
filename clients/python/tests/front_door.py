"""A recording front door for the API: a loopback HTTP server that forwards each request to the
stack unchanged and answers with the stack's answer unchanged, noting what arrived (method,
path, headers, arrival time) and what the stack answered. It does not answer for the API: every
answer is the API's own. It exists because the API's request log (src/api/request-log.ts) does not
name a request's Idempotency-Key, which the retry tests must show arrived twice.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Arrival:
    """One request as it arrived and the API's answer to it."""

    at: float
    method: str
    path: str
    headers: dict[str, str]
    status: int
    answer_headers: dict[str, str]


class FrontDoor:
    """Forwards to ``upstream``; ``url`` is where clients send; ``arrivals`` what came."""

    def __init__(self, upstream: str) -> None:
        self.arrivals: list[Arrival] = []
        upstream_client = httpx.Client(base_url=upstream, timeout=300)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self) -> None:
                at = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                answer = upstream_client.request(
                    self.command, self.path, content=body, headers=headers
                )
                owner.arrivals.append(
                    Arrival(
                        at,
                        self.command,
                        self.path.split("?")[0],
                        {k.lower(): v for k, v in headers.items()},
                        answer.status_code,
                        dict(answer.headers),
                    )
                )
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-encoding":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PATCH = do_DELETE = forward  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

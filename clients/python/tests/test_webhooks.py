"""verify_webhook against a real delivery: the stack POSTs a signed event to a receiver here."""

from __future__ import annotations

import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from durable_sandbox import Client, WebhookVerificationError, verify_webhook

from .conftest import SMALL

DELIVERY_TIMEOUT_S = 60


class Receiver:
    """A webhook receiver on loopback: answers 204 and keeps each request's raw body and headers."""

    def __init__(self) -> None:
        self.deliveries: queue.Queue[tuple[bytes, dict[str, str]]] = queue.Queue()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.deliveries.put((body, dict(self.headers.items())))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next_for(self, sandbox_id: str) -> tuple[bytes, dict[str, str]]:
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while True:
            body, headers = self.deliveries.get(timeout=max(0.1, deadline - time.monotonic()))
            if sandbox_id.encode() in body:
                return body, headers


@pytest.fixture()
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


def test_verify_webhook_reads_a_real_delivery_and_refuses_a_changed_one(
    client: Client, receiver: Receiver
) -> None:
    endpoint = client.create_webhook_endpoint(receiver.url, ["sandbox.running"])
    try:
        sandbox = client.create_sandbox_sync(SMALL)
        body, headers = receiver.next_for(sandbox.id)

        event = verify_webhook(endpoint.secret, body, headers)
        assert (event.type.root, event.data.id) == ("sandbox.running", sandbox.id)
        assert event.id == {k.lower(): v for k, v in headers.items()}["webhook-id"]
        assert event.id in {e.id for e in client.list_events(sandbox=sandbox.id).events}

        with pytest.raises(WebhookVerificationError):
            verify_webhook(endpoint.secret, body.replace(b"running", b"failed!"), headers)
        other = client.rotate_webhook_secret(endpoint.id).secret
        with pytest.raises(WebhookVerificationError):
            verify_webhook(other, body, headers)

        deadline = time.monotonic() + DELIVERY_TIMEOUT_S  # the attempt is written after the answer
        while not any(
            d.event_id == event.id and d.status == "succeeded"
            for d in client.list_webhook_deliveries(endpoint.id)
        ):
            assert time.monotonic() < deadline, "no succeeded delivery of the event was listed"
            time.sleep(0.2)
    finally:
        client.delete_webhook_endpoint(endpoint.id)

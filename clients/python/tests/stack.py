"""The embedded stack the tests run against, started from this checkout as CI starts it for
Schemathesis (environments/schemathesis/run.sh): ``node --import tsx tools/start.ts`` on a free
port with a throw-away DATA_DIR, its JSON log kept, until /readyz answers. Configured so every
retry the client makes can be provoked for real:

- tenant ``dev`` (``dev-token``): limits high enough that nothing is refused;
- tenant ``slow`` (``slow-token``): one create a second, a burst of one, so a second create at
  once answers 429 ``rate_limited`` with ``Retry-After``;
- OIDC on, its key set served by :class:`KeySetServer`, which can be told to fail, so a JWT's
  request answers 503 ``unavailable`` (``jwks_unavailable``) with ``Retry-After``;
- templates ``refused-sync`` and ``refused-async`` (:data:`REFUSED_TEMPLATES`);
- ``WEBHOOK_ALLOWED_CIDRS=127.0.0.1/32``, so deliveries reach a receiver in the test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[3]
ISSUER = "https://issuer.python-client.test"
AUDIENCE = "durable-sandbox"
KEY_ID = "python-client-test"
READY_TIMEOUT_S = 240
#: How long the simulated node takes to give a pod its IP, in ms (tools/start.ts).
NODE_DELAY_MS = 1500
#: Templates of an image of their own each, whose root filesystem (451 MiB, the simulated node's)
#: no create has taught the API yet: the first create of each below it is refused by the node,
#: not by the API (which refuses later ones at once, having learned the floor of the image).
REFUSED_TEMPLATES = ("refused-sync", "refused-async")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KeySetServer:
    """The identity provider's JWKS (RFC 7517) on loopback: answers 500 to the next
    ``failures`` fetches, the key set otherwise, and counts every fetch."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.kids: list[str] = []
        self.failures = 0
        self.fetches: list[tuple[float, int]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                status = 200
                if owner.failures > 0:
                    owner.failures -= 1
                    status = 500
                owner.fetches.append((time.time(), status))
                body = json.dumps(owner.key_set() if status == 200 else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def key_set(self) -> dict[str, Any]:
        """The served set: the one key under every key id a token was issued with."""
        return {
            "keys": [{**self.public, "kid": kid, "alg": "RS256", "use": "sig"} for kid in self.kids]
        }

    def token(self, tenant: str) -> str:
        """A JWT for ``tenant``, valid for an hour, signed with the served key under a key id
        of its own, so the API fetches the set again for it (OIDC_JWKS_COOLDOWN_MS=0) whatever
        it cached before."""
        kid = f"{KEY_ID}-{len(self.kids)}"
        self.kids.append(kid)
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "python-client-test",
            "tenant": tenant,
            "iat": now,
            "exp": now + 3600,
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": kid})

    def close(self) -> None:
        self.server.shutdown()


@dataclass
class Stack:
    """A running embedded stack: its URL, its log file and the key set server beside it."""

    url: str
    log_path: Path
    key_set: KeySetServer
    data_dir: Path

    def requests(self) -> list[dict[str, Any]]:
        """The API's request log so far (src/api/request-log.ts): one entry per answered request,
        with ``method``, ``path``, ``status``, ``request_id``, ``tenant`` and ``time`` (epoch ms),
        in the order they finished."""
        entries = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("msg") in ("request", "request failed"):
                entries.append(entry)
        return entries


def start_stack() -> Iterator[Stack]:
    """Starts the stack, yields it once ready, stops it (SIGTERM, then its exit awaited)."""
    key_set = KeySetServer()
    data_dir = Path(tempfile.mkdtemp(prefix="durable-sandbox-python-client-"))
    port = free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "DATA_DIR": str(data_dir),
        "LOG_LEVEL": "info",
        "LOG_FORMAT": "json",
        "API_TOKENS": "dev:dev-token,slow:slow-token",
        "TENANT_LIMITS": json.dumps(
            {
                "default": {
                    "sandboxes": 1000,
                    "creates_per_second": 1000,
                    "create_burst": 2000,
                    "waits": 500,
                },
                "tenants": {"slow": {"creates_per_second": 1, "create_burst": 1}},
            }
        ),
        "OIDC_ISSUER": ISSUER,
        "OIDC_AUDIENCE": AUDIENCE,
        "OIDC_JWKS_URL": key_set.url,
        "OIDC_TENANT_CLAIM": "tenant",
        "OIDC_JWKS_COOLDOWN_MS": "0",
        "SANDBOX_TEMPLATES": json.dumps(
            {
                "base": {"image": "ghcr.io/durable-sandbox/base:1"},
                **{
                    name: {"image": f"ghcr.io/durable-sandbox/{name}:1"}
                    for name in REFUSED_TEMPLATES
                },
            }
        ),
        "WEBHOOK_ALLOWED_CIDRS": "127.0.0.1/32",
        # Long enough that a create can be cancelled while it waits for its pod.
        "SIMULATED_NODE_DELAY_MS": str(NODE_DELAY_MS),
    }
    log_path = data_dir / "stack.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            ["node", "--import", "tsx", "tools/start.ts"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the stack stopped before it was ready:\n{log_path.read_text()}"
                )
            try:
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                tail = log_path.read_text()[-5000:]
                raise RuntimeError(f"the stack was not ready in {READY_TIMEOUT_S} s:\n{tail}")
            time.sleep(1)
        yield Stack(url=url, log_path=log_path, key_set=key_set, data_dir=data_dir)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        key_set.close()
        shutil.rmtree(data_dir, ignore_errors=True)

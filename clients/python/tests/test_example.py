"""examples/ten_at_once.py runs against the stack: ten sandboxes, created at once, all running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from durable_sandbox import Client

from .stack import Stack

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ten_at_once.py"


def test_ten_at_once_creates_ten_running_sandboxes(stack: Stack, client: Client) -> None:
    env = {**os.environ, "DURABLE_SANDBOX_URL": stack.url, "DURABLE_SANDBOX_TOKEN": "dev-token"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 10, done.stdout
    ids = {line.split()[0] for line in lines}
    assert len(ids) == 10 and all(line.split()[1] == "running" for line in lines)
    creates = client.list_operations(type="sandbox.create", limit=200).operations
    assert ids <= {op.sandbox_id for op in creates if op.status.root == "succeeded"}

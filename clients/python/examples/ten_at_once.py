"""Creates ten sandboxes at once with asyncio, waits for each create to finish, prints one line
per sandbox, and deletes them again.

    $ python clients/python/examples/ten_at_once.py
    DURABLE_SANDBOX_URL (default http://127.0.0.1:8080) and DURABLE_SANDBOX_TOKEN (default
    dev-token) say where the API is and who calls it.

Exit status 0 when all ten ran, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sys

from durable_sandbox import AsyncClient

REQUEST = {"template": "base", "resources": {"cpu": "250m", "memory_mib": 256, "disk_mib": 2048}}


async def main() -> int:
    url = os.environ.get("DURABLE_SANDBOX_URL", "http://127.0.0.1:8080")
    token = os.environ.get("DURABLE_SANDBOX_TOKEN", "dev-token")
    async with AsyncClient(url, token) as client:
        # Each create has its own Idempotency-Key, kept across its retries.
        operations = await asyncio.gather(
            *(client.create_sandbox_and_wait(REQUEST) for _ in range(10))
        )
        for operation in operations:
            if operation.status.root == "succeeded" and operation.result is not None:
                sandbox = operation.result.sandbox
                print(f"{sandbox.id} {sandbox.state.root} {sandbox.pod.ip}")
            else:
                print(f"{operation.sandbox_id} {operation.status.root} {operation.error}")
        await asyncio.gather(
            *(client.delete_sandbox(operation.sandbox_id) for operation in operations)
        )
    return 0 if all(op.status.root == "succeeded" for op in operations) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

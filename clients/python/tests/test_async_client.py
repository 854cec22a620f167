"""Every method of the AsyncClient against the embedded stack (tests/stack.py)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from durable_sandbox import (
    AlreadyDoneError,
    AsyncClient,
    InvalidRequestError,
    NotFoundError,
    models,
)

from .conftest import SMALL, refused


async def test_creates_waits_and_reads(async_client: AsyncClient) -> None:
    key = str(uuid.uuid4())
    operation = await async_client.create_sandbox(SMALL, idempotency_key=key)
    assert (await async_client.create_sandbox(SMALL, idempotency_key=key)).id == operation.id
    changed = await async_client.get_operation(operation.id, wait_s=20)
    assert (changed.phase, changed.done) != (operation.phase, operation.done)
    done = await async_client.wait_for_operation(operation.id)
    assert done.status.root == "succeeded"
    waited = await async_client.create_sandbox_and_wait(SMALL)
    assert waited.result is not None and waited.result.sandbox.state.root == "running"
    sandbox = await async_client.create_sandbox_sync(SMALL)
    assert (await async_client.get_sandbox(sandbox.id)).state.root == "running"
    with pytest.raises(InvalidRequestError) as raised:
        await async_client.create_sandbox_sync(refused("refused-async"))
    assert raised.value.details["operation_id"].startswith("op_")


async def test_cancel(async_client: AsyncClient) -> None:
    operation = await async_client.create_sandbox(SMALL)
    assert (await async_client.cancel_operation(operation.id)).requested_cancellation
    assert (await async_client.wait_for_operation(operation.id)).status.root == "cancelled"
    with pytest.raises(AlreadyDoneError):
        await async_client.cancel_operation(operation.id)


async def test_lists_filters_and_pages(async_client: AsyncClient) -> None:
    run = uuid.uuid4().hex[:12]
    made = await asyncio.gather(
        *(async_client.create_sandbox_sync({**SMALL, "labels": {"run": run}}) for _ in range(3))
    )
    ids = {s.id for s in made}
    page = await async_client.list_sandboxes(
        label_selector=f"run={run}", state="running", template="base", limit=2
    )
    assert len(page.sandboxes) == 2 and page.next_page_token
    assert {
        s.id async for s in async_client.iter_sandboxes(label_selector=f"run={run}", limit=1)
    } == ids
    since = min(s.created_at for s in made) - timedelta(seconds=1)
    later = datetime.now(timezone.utc) + timedelta(minutes=1)
    assert (
        await async_client.list_sandboxes(
            label_selector=f"run={run}", create_time_after=since, create_time_before=later
        )
    ).sandboxes
    operations = {
        op.sandbox_id
        async for op in async_client.iter_operations(
            type="sandbox.create", status="succeeded", create_time_after=since, limit=2
        )
    }
    assert ids <= operations
    one = await async_client.list_operations(sandbox_id=made[0].id, create_time_before=later)
    assert [op.id for op in one.operations] == [made[0].operation_id]


async def test_labels_extend_delete(async_client: AsyncClient) -> None:
    sandbox = await async_client.create_sandbox_sync({**SMALL, "labels": {"team": "a"}})
    patched = await async_client.update_sandbox_labels(sandbox.id, {"env": "dev"}, keys=["env"])
    assert patched.labels.root == {"team": "a", "env": "dev"}
    extended = await async_client.extend_sandbox(sandbox.id, ttl="3600s")
    assert extended.expire_time is not None
    delete = await async_client.delete_sandbox(sandbox.id)
    assert (await async_client.wait_for_operation(delete.id)).status.root == "succeeded"
    with pytest.raises(AlreadyDoneError):
        await async_client.delete_sandbox(sandbox.id)


async def test_events(async_client: AsyncClient) -> None:
    sandbox = await async_client.create_sandbox_sync(SMALL)
    page = await async_client.list_events(sandbox=sandbox.id, types=["sandbox.running"])
    assert [e.data.id for e in page.events] == [sandbox.id]
    await async_client.delete_sandbox(sandbox.id)
    events = async_client.follow_events(sandbox=sandbox.id, types="sandbox.deleted", wait_s=20)
    event = await anext(events)
    await events.aclose()
    assert (event.type.root, event.data.id) == ("sandbox.deleted", sandbox.id)


async def test_catalog_quota_and_webhooks(async_client: AsyncClient) -> None:
    assert "base" in {t.name for t in await async_client.list_templates()}
    assert (await async_client.get_template("base")).name == "base"
    assert (await async_client.get_quota()).tenant == "dev"
    endpoint = await async_client.create_webhook_endpoint(
        "https://hooks.example.com/a", ["sandbox.failed"]
    )
    assert endpoint.id in {e.id for e in await async_client.list_webhook_endpoints()}
    assert (await async_client.get_webhook_endpoint(endpoint.id)).event_types[
        0
    ].root == "sandbox.failed"
    assert (await async_client.rotate_webhook_secret(endpoint.id)).secret != endpoint.secret
    since = datetime.now(timezone.utc) - timedelta(minutes=5)
    assert (
        await async_client.recover_webhook_events(endpoint.id, since)
    ).endpoint_id == endpoint.id
    deliveries = await async_client.list_webhook_deliveries(endpoint.id)
    assert all(isinstance(d, models.WebhookDelivery) for d in deliveries)
    await async_client.delete_webhook_endpoint(endpoint.id)
    with pytest.raises(NotFoundError):
        await async_client.get_webhook_endpoint(endpoint.id)

"""Every method of the sync Client against the embedded stack (tests/stack.py)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from durable_sandbox import (
    AlreadyDoneError,
    Client,
    InvalidRequestError,
    NotFoundError,
    NotRunningError,
    UnauthenticatedError,
    models,
)

from .conftest import SMALL, refused


def labelled(run: str, **labels: str) -> dict:
    return {**SMALL, "labels": {"run": run, **labels}}


def test_create_and_wait_answers_the_running_sandbox(client: Client) -> None:
    phases: list[str] = []
    operation = client.create_sandbox_and_wait(SMALL, on_update=lambda op: phases.append(op.phase))
    assert operation.status.root == "succeeded", operation.error
    assert operation.result is not None
    sandbox = operation.result.sandbox
    assert sandbox.state.root == "running" and sandbox.pod.ip
    assert phases[-1] == "finished"
    assert client.get_sandbox(sandbox.id).id == sandbox.id


def test_create_answers_202_with_its_operation_and_a_repeat_of_its_key_the_same(
    client: Client,
) -> None:
    key = str(uuid.uuid4())
    first = client.create_sandbox(SMALL, idempotency_key=key)
    again = client.create_sandbox(SMALL, idempotency_key=key)
    assert isinstance(first, models.Operation) and first.type == "sandbox.create"
    assert again.id == first.id
    assert client.wait_for_operation(first.id).status.root == "succeeded"


def test_get_operation_long_polls_until_a_change(client: Client) -> None:
    operation = client.create_sandbox(SMALL)
    changed = client.get_operation(operation.id, wait_s=20)
    assert (changed.phase, changed.done) != (operation.phase, operation.done)
    assert client.wait_for_operation(operation.id).done


def test_create_sandbox_sync_answers_the_running_sandbox(client: Client) -> None:
    sandbox = client.create_sandbox_sync(SMALL)
    assert isinstance(sandbox, models.Sandbox)
    assert sandbox.state.root == "running" and sandbox.pod.ip


def test_create_sandbox_sync_raises_the_nodes_refusal_with_its_operation(client: Client) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        client.create_sandbox_sync(refused("refused-sync"))
    error = raised.value
    assert error.status == 400 and error.code == "invalid_request"
    assert error.details["operation_id"].startswith("op_")
    assert error.request_id
    failed = client.get_operation(error.details["operation_id"])
    assert failed.status.root == "failed"


def test_cancel_operation_ends_the_create_cancelled(client: Client) -> None:
    operation = client.create_sandbox(SMALL)
    cancelled = client.cancel_operation(operation.id)
    assert cancelled.id == operation.id and cancelled.requested_cancellation
    done = client.wait_for_operation(operation.id)
    assert done.status.root == "cancelled"
    with pytest.raises(AlreadyDoneError):
        client.cancel_operation(operation.id)


def test_list_sandboxes_filters_by_labels_state_and_template_and_pages(client: Client) -> None:
    run = uuid.uuid4().hex[:12]
    ids = {client.create_sandbox_sync(labelled(run, team="a")).id for _ in range(3)}
    other = client.create_sandbox_sync(labelled(run, team="b")).id

    page = client.list_sandboxes(label_selector=f"run={run},team=a", limit=2)
    assert len(page.sandboxes) == 2 and page.next_page_token
    second = client.list_sandboxes(
        label_selector=f"run={run},team=a", limit=2, page_token=page.next_page_token
    )
    assert {s.id for s in page.sandboxes + second.sandboxes} == ids

    every = list(client.iter_sandboxes(label_selector=f"run={run}", limit=1))
    assert {s.id for s in every} == ids | {other}
    assert list(client.iter_sandboxes(label_selector=f"run={run}", state="failed")) == []
    running = client.list_sandboxes(
        label_selector=f"run={run}", state=["running", "creating"], template="base", limit=200
    )
    assert {s.id for s in running.sandboxes} == ids | {other}
    assert client.list_sandboxes(label_selector=f"run={run}", template="other").sandboxes == []
    later = datetime.now(timezone.utc) + timedelta(minutes=1)
    assert (
        client.list_sandboxes(label_selector=f"run={run}", create_time_after=later).sandboxes == []
    )
    assert (
        len(client.list_sandboxes(label_selector=f"run={run}", create_time_before=later).sandboxes)
        == 4
    )


def test_list_sandboxes_raises_invalid_request_for_a_malformed_selector(client: Client) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        client.list_sandboxes(label_selector="team in (a")
    assert raised.value.status == 400 and raised.value.details


def test_list_operations_filters_and_pages(client: Client) -> None:
    sandbox = client.create_sandbox_sync(SMALL)
    by_sandbox = client.list_operations(
        sandbox_id=sandbox.id, type="sandbox.create", status=["succeeded"]
    )
    assert [op.sandbox_id for op in by_sandbox.operations] == [sandbox.id]
    since = sandbox.created_at - timedelta(seconds=1)
    recent = list(client.iter_operations(create_time_after=since, limit=1))
    assert sandbox.operation_id in {op.id for op in recent}
    assert client.list_operations(sandbox_id=sandbox.id, status="failed").operations == []
    assert client.list_operations(sandbox_id=sandbox.id, create_time_before=since).operations == []


def test_update_sandbox_labels_replaces_or_changes_keys(client: Client) -> None:
    sandbox = client.create_sandbox_sync({**SMALL, "labels": {"team": "a", "env": "dev"}})
    replaced = client.update_sandbox_labels(sandbox.id, {"team": "b"})
    assert replaced.labels.root == {"team": "b"}
    changed = client.update_sandbox_labels(sandbox.id, {"env": "prod"}, keys=["env", "team"])
    assert changed.labels.root == {"env": "prod"}
    assert client.get_sandbox(sandbox.id).labels.root == {"env": "prod"}


def test_extend_sandbox_sets_the_expire_time(client: Client) -> None:
    sandbox = client.create_sandbox_sync(SMALL)
    extended = client.extend_sandbox(sandbox.id, ttl="7200s")
    assert extended.expire_time is not None
    left = extended.expire_time - datetime.now(timezone.utc)
    assert timedelta(minutes=115) < left <= timedelta(hours=2)
    at = (datetime.now(timezone.utc) + timedelta(hours=3)).replace(microsecond=0)
    assert client.extend_sandbox(sandbox.id, expire_time=at).expire_time == at


def test_delete_sandbox_deletes_it_and_a_second_delete_is_already_done(client: Client) -> None:
    sandbox = client.create_sandbox_sync(SMALL)
    operation = client.delete_sandbox(sandbox.id)
    assert operation.type == "sandbox.delete"
    assert client.wait_for_operation(operation.id).status.root == "succeeded"
    assert client.get_sandbox(sandbox.id).state.root == "deleted"
    with pytest.raises(AlreadyDoneError):
        client.delete_sandbox(sandbox.id)
    with pytest.raises(NotRunningError):
        client.extend_sandbox(sandbox.id, ttl="60s")


def test_an_unknown_sandbox_raises_not_found(client: Client) -> None:
    with pytest.raises(NotFoundError) as raised:
        client.get_sandbox("sbx_" + "a" * 26)
    assert raised.value.status == 404 and raised.value.request_id


def test_a_wrong_token_raises_unauthenticated(stack) -> None:
    with Client(stack.url, "no-such-token") as wrong, pytest.raises(UnauthenticatedError) as raised:
        wrong.get_quota()
    assert raised.value.details["reason"] == "unknown_token"


def test_list_events_and_follow_events_read_the_feed(client: Client) -> None:
    sandbox = client.create_sandbox_sync(SMALL)
    page = client.list_events(sandbox=sandbox.id, limit=10)
    assert [(e.type.root, e.data.id) for e in page.events] == [("sandbox.running", sandbox.id)]
    empty = client.list_events(after=page.next_cursor, sandbox=sandbox.id, wait_s=1)
    assert empty.events == []

    client.delete_sandbox(sandbox.id)
    followed = client.follow_events(after=page.next_cursor, sandbox=sandbox.id, wait_s=20)
    event = next(followed)
    assert (event.type.root, event.data.delete_cause.root) == ("sandbox.deleted", "requested")
    only = client.list_events(sandbox=sandbox.id, types="sandbox.deleted")
    assert [e.id for e in only.events] == [event.id]


def test_templates_and_quota(client: Client) -> None:
    templates = client.list_templates()
    assert "base" in {t.name for t in templates}
    assert client.get_template("base").image == next(t.image for t in templates if t.name == "base")
    with pytest.raises(NotFoundError):
        client.get_template("no-such-template")
    quota = client.get_quota()
    assert quota.tenant == "dev" and quota.limits.sandboxes == 1000


def test_webhook_endpoints(client: Client) -> None:
    endpoint = client.create_webhook_endpoint("https://hooks.example.com/x", ["sandbox.running"])
    assert endpoint.secret.startswith("whsec_")
    assert endpoint.id in {e.id for e in client.list_webhook_endpoints()}
    assert client.get_webhook_endpoint(endpoint.id).url == "https://hooks.example.com/x"
    rotated = client.rotate_webhook_secret(endpoint.id)
    assert rotated.secret != endpoint.secret and rotated.previous_secret_expires_at
    recovery = client.recover_webhook_events(
        endpoint.id, datetime.now(timezone.utc) - timedelta(hours=1)
    )
    assert recovery.endpoint_id == endpoint.id and recovery.queued >= 0
    assert all(
        isinstance(d, models.WebhookDelivery) for d in client.list_webhook_deliveries(endpoint.id)
    )
    client.delete_webhook_endpoint(endpoint.id)
    with pytest.raises(NotFoundError):
        client.get_webhook_endpoint(endpoint.id)
    with pytest.raises(InvalidRequestError) as raised:
        client.create_webhook_endpoint("not a url", ["sandbox.running"])
    assert raised.value.details.get("field") == "url"

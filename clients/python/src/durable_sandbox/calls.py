"""Each route of the API as a request description (:class:`Call`): method, path, query, body,
whether it may be repeated (retry.py), and the model its answer is read into. Both clients
(client.py, async_client.py) send these, so they cannot differ in what they ask.

Query parameters follow the document: arrays as repeated ``form`` parameters
(``state=creating&state=running``), durations as ``<n>s``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, TypeAdapter

from . import models
from .retry import Repeatable

#: One query parameter value; a list repeats the parameter.
QueryValue = str | int | Sequence[str] | None


@dataclass(frozen=True)
class Call:
    """One request of the API.

    Attributes:
        method: HTTP method.
        path: the path, ids already escaped.
        query: query parameters; None values are left out, lists repeated.
        body: the JSON body, or None.
        headers: extra headers (the create's Idempotency-Key, a read's If-None-Match).
        repeatable: ``read`` or ``create`` when it may be sent again (retry.py), else None.
        answer: the type its 2xx JSON body is read into; None for no body (204).
        not_modified: what a 304 answers (RFC 9110 §15.4.5): the resource as last seen, of the
            tag the read's ``If-None-Match`` names; None when the read names none (then a 304
            is an error).
    """

    method: str
    path: str
    answer: Any
    query: Mapping[str, QueryValue] = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    repeatable: Repeatable | None = "read"
    not_modified: Any = None

    @property
    def what(self) -> str:
        """``METHOD /path`` for messages."""
        return f"{self.method} {self.path}"

    def params(self) -> list[tuple[str, str | int]]:
        """The query as httpx params: lists repeated, None left out."""
        out: list[tuple[str, str | int]] = []
        for name, value in self.query.items():
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                out.extend((name, item) for item in value)
            else:
                out.append((name, value))  # type: ignore[arg-type]
        return out

    def parse(self, data: Any) -> Any:
        """The answer's JSON read into :attr:`answer`."""
        if self.answer is None:
            return None
        return TypeAdapter(self.answer).validate_python(data)


@dataclass(frozen=True)
class Seen:
    """A resource as last read, with the strong ``ETag`` (RFC 9110 §8.8.3) it was answered
    with; ``etag`` None when the answer carried none (then the next read is unconditional)."""

    resource: Any
    etag: str | None


def new_idempotency_key() -> str:
    """A new Idempotency-Key: a random UUID (RFC 9562 version 4), as the IETF draft
    "The Idempotency-Key HTTP Header Field" recommends."""
    return str(uuid.uuid4())


def _id(value: str) -> str:
    return quote(value, safe="")


def _json(value: BaseModel | Mapping[str, Any]) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return dict(value)


def _list(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def _time(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _wait(wait_s: float | None) -> str | None:
    """A wait in the API's duration form: whole seconds as ``<n>s``, else ``<n>ms``."""
    if wait_s is None:
        return None
    return f"{int(wait_s)}s" if float(wait_s).is_integer() else f"{round(wait_s * 1000)}ms"


CreateBody = models.CreateSandboxRequest | Mapping[str, Any]


def create_sandbox(request: CreateBody, idempotency_key: str) -> Call:
    """``POST /v1/sandboxes``: 202 with the create's Operation."""
    return Call(
        "POST",
        "/v1/sandboxes",
        models.Operation,
        body=_json(request),
        headers={"Idempotency-Key": idempotency_key},
        repeatable="create",
    )


def create_sandbox_sync(request: CreateBody, idempotency_key: str) -> Call:
    """``POST /sync/v1/sandboxes``: 201 with the running Sandbox, or the create's error."""
    return Call(
        "POST",
        "/sync/v1/sandboxes",
        models.Sandbox,
        body=_json(request),
        headers={"Idempotency-Key": idempotency_key},
        repeatable="create",
    )


def get_operation(operation_id: str, wait_s: float | None = None, seen: Seen | None = None) -> Call:
    """``GET /v1/operations/{id}[?wait=<n>s]``; with ``seen``, conditional on its tag
    (``If-None-Match``, docs/api.md "Long-poll"): the API answers 304 while the operation is
    still at that tag (with ``wait``, at the wait's end), and the 304 answers ``seen``'s
    operation; a long-poll answers at once when the operation is already past it."""
    tag = seen.etag if seen is not None else None
    return Call(
        "GET",
        f"/v1/operations/{_id(operation_id)}",
        models.Operation,
        query={"wait": _wait(wait_s)},
        headers={"If-None-Match": tag} if tag else {},
        not_modified=seen.resource if tag and seen is not None else None,
    )


def cancel_operation(operation_id: str) -> Call:
    """``POST /v1/operations/{id}/cancel``; not repeated (a repeat answers ``already_done``)."""
    return Call(
        "POST",
        f"/v1/operations/{_id(operation_id)}/cancel",
        models.Operation,
        repeatable=None,
    )


def list_operations(
    *,
    status: str | Sequence[str] | None = None,
    type: str | Sequence[str] | None = None,
    sandbox_id: str | None = None,
    create_time_after: datetime | str | None = None,
    create_time_before: datetime | str | None = None,
    limit: int | None = None,
    page_token: str | None = None,
) -> Call:
    """``GET /v1/operations`` with its filters (AIP-132/158)."""
    return Call(
        "GET",
        "/v1/operations",
        models.OperationPage,
        query={
            "status": _list(status),
            "type": _list(type),
            "sandbox_id": sandbox_id,
            "create_time_after": _time(create_time_after),
            "create_time_before": _time(create_time_before),
            "limit": limit,
            "page_token": page_token,
        },
    )


def get_sandbox(sandbox_id: str) -> Call:
    """``GET /v1/sandboxes/{id}``."""
    return Call("GET", f"/v1/sandboxes/{_id(sandbox_id)}", models.Sandbox)


def list_sandboxes(
    *,
    state: str | Sequence[str] | None = None,
    template: str | None = None,
    label_selector: str | None = None,
    create_time_after: datetime | str | None = None,
    create_time_before: datetime | str | None = None,
    limit: int | None = None,
    page_token: str | None = None,
) -> Call:
    """``GET /v1/sandboxes`` with its filters (AIP-132/158)."""
    return Call(
        "GET",
        "/v1/sandboxes",
        models.SandboxPage,
        query={
            "state": _list(state),
            "template": template,
            "label_selector": label_selector,
            "create_time_after": _time(create_time_after),
            "create_time_before": _time(create_time_before),
            "limit": limit,
            "page_token": page_token,
        },
    )


def update_sandbox_labels(
    sandbox_id: str, labels: Mapping[str, str], keys: Sequence[str] | None = None
) -> Call:
    """``PATCH /v1/sandboxes/{id}?update_mask=…`` (AIP-134, AIP-161): without ``keys`` the
    labels become ``labels``; with ``keys`` each is set from ``labels`` or removed when absent.
    Idempotent, so repeated like a read."""
    mask = "labels" if keys is None else ",".join(f"labels.`{key}`" for key in keys)
    return Call(
        "PATCH",
        f"/v1/sandboxes/{_id(sandbox_id)}",
        models.Sandbox,
        query={"update_mask": mask},
        body={"labels": dict(labels)},
    )


def delete_sandbox(sandbox_id: str) -> Call:
    """``DELETE /v1/sandboxes/{id}``: 202 with the delete's Operation; not repeated."""
    return Call("DELETE", f"/v1/sandboxes/{_id(sandbox_id)}", models.Operation, repeatable=None)


def extend_sandbox(
    sandbox_id: str, *, ttl: str | None = None, expire_time: datetime | str | None = None
) -> Call:
    """``POST /v1/sandboxes/{id}:extend`` (AIP-136) with ``ttl`` (e.g. ``3600s``) or
    ``expire_time``; repeated like a read (a ``ttl`` counts from the try that lands)."""
    body = {"ttl": ttl} if ttl is not None else {"expire_time": _time(expire_time)}
    return Call("POST", f"/v1/sandboxes/{_id(sandbox_id)}:extend", models.Sandbox, body=body)


def list_events(
    *,
    after: str | None = None,
    types: str | Sequence[str] | None = None,
    sandbox: str | None = None,
    limit: int | None = None,
    wait_s: float | None = None,
) -> Call:
    """``GET /v1/events`` (docs/webhooks.md, "The event feed")."""
    return Call(
        "GET",
        "/v1/events",
        models.EventPage,
        query={
            "after": after,
            "type": _list(types),
            "sandbox": sandbox,
            "limit": limit,
            "wait": _wait(wait_s),
        },
    )


def list_templates() -> Call:
    """``GET /v1/templates``."""
    return Call("GET", "/v1/templates", _TemplateList)


def get_template(name: str) -> Call:
    """``GET /v1/templates/{name}``."""
    return Call("GET", f"/v1/templates/{_id(name)}", models.Template)


def get_quota() -> Call:
    """``GET /v1/quota``."""
    return Call("GET", "/v1/quota", models.Quota)


def create_webhook_endpoint(url: str, event_types: Sequence[str]) -> Call:
    """``POST /v1/webhook-endpoints``; not repeated (a repeat registers a second endpoint)."""
    return Call(
        "POST",
        "/v1/webhook-endpoints",
        models.WebhookEndpointWithSecret,
        body={"url": url, "event_types": list(event_types)},
        repeatable=None,
    )


def list_webhook_endpoints() -> Call:
    """``GET /v1/webhook-endpoints``."""
    return Call("GET", "/v1/webhook-endpoints", models.WebhookEndpointList)


def get_webhook_endpoint(endpoint_id: str) -> Call:
    """``GET /v1/webhook-endpoints/{id}``."""
    return Call("GET", f"/v1/webhook-endpoints/{_id(endpoint_id)}", models.WebhookEndpoint)


def delete_webhook_endpoint(endpoint_id: str) -> Call:
    """``DELETE /v1/webhook-endpoints/{id}``: 204; not repeated."""
    return Call("DELETE", f"/v1/webhook-endpoints/{_id(endpoint_id)}", None, repeatable=None)


def rotate_webhook_secret(endpoint_id: str) -> Call:
    """``POST /v1/webhook-endpoints/{id}/rotate-secret``; not repeated."""
    return Call(
        "POST",
        f"/v1/webhook-endpoints/{_id(endpoint_id)}/rotate-secret",
        models.WebhookEndpointWithSecret,
        repeatable=None,
    )


def recover_webhook_events(endpoint_id: str, since: datetime | str) -> Call:
    """``POST /v1/webhook-endpoints/{id}:recover``; repeated (it queues only what is not taken)."""
    return Call(
        "POST",
        f"/v1/webhook-endpoints/{_id(endpoint_id)}:recover",
        models.WebhookRecovery,
        body={"since": _time(since)},
    )


def list_webhook_deliveries(endpoint_id: str) -> Call:
    """``GET /v1/webhook-endpoints/{id}/deliveries``."""
    return Call(
        "GET",
        f"/v1/webhook-endpoints/{_id(endpoint_id)}/deliveries",
        models.WebhookDeliveryList,
    )


class _TemplateList(BaseModel):
    """``GET /v1/templates``'s body (the document names no schema for it)."""

    templates: list[models.Template]

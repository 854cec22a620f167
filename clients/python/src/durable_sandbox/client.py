"""The synchronous client of the durable-sandbox API, on httpx. Its twin with the same methods
is async_client.py; both send the requests of calls.py and read the answers with answers.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from . import calls, models
from .answers import (
    LONG_POLL_WAIT_S,
    MIN_POLL_INTERVAL_S,
    error_of_transport,
    operation_state,
    pause_before_retry,
    poll_pause_s,
    read_answer,
)
from .calls import Call, CreateBody, Seen
from .errors import DurableSandboxError
from .retry import DEFAULT_RETRY_POLICY, RetryPolicy

#: Seconds a request may take, reads included: above the longest long-poll (60 s) and a
#: synchronous create's wait.
DEFAULT_TIMEOUT_S = 300.0


def timeout_of(timeout_s: float) -> httpx.Timeout:
    """httpx's timeouts of one try: ``timeout_s`` for each phase, connecting at most 10 s."""
    return httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))


class Client:
    """Calls the durable-sandbox API and waits for its answers.

    Every method raises the :class:`~durable_sandbox.errors.DurableSandboxError` subclass of the
    answer's error code (e.g. :class:`~durable_sandbox.errors.NotFoundError`), after the retries
    retry.py allows; :class:`~durable_sandbox.errors.UnavailableError` with status 0 when no
    answer came.

    Args:
        base_url: where the API is, e.g. ``http://127.0.0.1:8080``.
        token: a tenant's bearer token (API_TOKENS) or a JWT, sent as
            ``Authorization: Bearer <token>``.
        retry: how often and how patiently a request is tried (retry.py).
        timeout_s: seconds one try may take (long-polls included).
        transport: an httpx transport, e.g. to route through a proxy; default httpx's.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        retry: RetryPolicy = DEFAULT_RETRY_POLICY,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout_of(timeout_s),
            transport=transport,
        )

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Creates and operations

    def create_sandbox(
        self, request: CreateBody, *, idempotency_key: str | None = None
    ) -> models.Operation:
        """Starts a create (``POST /v1/sandboxes``): 202 with its Operation; follow it with
        :meth:`wait_for_operation`. One Idempotency-Key (``idempotency_key``, or a new UUID)
        for the create and every retry of it, so a retry never creates twice.

        Args:
            request: ``{"template", "resources": {"cpu", "memory_mib", "disk_mib"}, "ttl"?,
                "labels"?}`` or a :class:`~durable_sandbox.models.CreateSandboxRequest`.

        Raises:
            InvalidRequestError, IdempotencyConflictError (the key was used with another
            body), QuotaExceededError / RateLimitedError (after the retries), UnavailableError.
        """
        key = idempotency_key or calls.new_idempotency_key()
        return self._send(calls.create_sandbox(request, key))

    def create_sandbox_and_wait(
        self,
        request: CreateBody,
        *,
        idempotency_key: str | None = None,
        on_update: Callable[[models.Operation], None] | None = None,
    ) -> models.Operation:
        """Creates and waits until the create is done (:meth:`wait_for_operation`).

        Returns:
            the finished Operation: ``succeeded`` with ``result.sandbox``, or ``failed`` /
            ``cancelled`` with ``error`` (a failed create is returned, not raised).
        """
        operation = self.create_sandbox(request, idempotency_key=idempotency_key)
        return self.wait_for_operation(operation.id, on_update=on_update)

    def create_sandbox_sync(
        self, request: CreateBody, *, idempotency_key: str | None = None
    ) -> models.Sandbox:
        """The synchronous create (``POST /sync/v1/sandboxes``): answers when the sandbox runs.

        Returns:
            the running Sandbox.

        Raises:
            the create's failure: InvalidRequestError (400, e.g. the node's reason),
            QuotaExceededError (429), PodNeverReadyError / NoNodeAvailableError (503), …;
            its ``details["operation_id"]`` names the operation behind it.
        """
        key = idempotency_key or calls.new_idempotency_key()
        return self._send(calls.create_sandbox_sync(request, key))

    def get_operation(self, operation_id: str, *, wait_s: float | None = None) -> models.Operation:
        """One read of an operation (``GET /v1/operations/{id}``).

        Args:
            wait_s: long-poll: the API answers at the next change (status, phase, done) or
                after this many seconds.

        Raises:
            NotFoundError
        """
        return self._send(calls.get_operation(operation_id, wait_s))

    def wait_for_operation(
        self,
        operation_id: str,
        *,
        on_update: Callable[[models.Operation], None] | None = None,
        wait_s: float = LONG_POLL_WAIT_S,
    ) -> models.Operation:
        """Waits until the operation is done: one plain read, then long-polls of ``wait_s``
        seconds, each naming the ``ETag`` of the answer before in ``If-None-Match``
        (docs/api.md, "Long-poll"), so a change that landed between two reads is answered at
        once; a 304 (no change within the wait) answers the operation as last seen, and the
        wait asks again. Nothing sleeps between the reads, except after an answer that came
        back at once unchanged.

        Args:
            on_update: called with every answer, the last (done) one included (after a 304,
                the operation as last seen).
            wait_s: how long each long-poll asks the API to wait, in seconds (at most 60).

        Returns:
            the finished Operation, whatever its status.

        Raises:
            NotFoundError, or the error of a read that failed through its retries.
        """
        previous: tuple[Any, ...] | None = None
        seen: Seen | None = None
        while True:
            asked = time.monotonic()
            call = calls.get_operation(operation_id, None if previous is None else wait_s, seen)
            operation, response = self._send_with_response(call)
            seen = Seen(operation, response.headers.get("etag"))
            if on_update is not None:
                on_update(operation)
            if operation.done:
                return operation
            state = operation_state(operation)
            at_once = time.monotonic() - asked < MIN_POLL_INTERVAL_S
            if previous is not None and state == previous and at_once:
                time.sleep(poll_pause_s(response.headers.get("retry-after")))
            previous = state

    def cancel_operation(self, operation_id: str) -> models.Operation:
        """Cancels a running create (``POST /v1/operations/{id}/cancel``): it compensates and
        ends ``cancelled``. Not retried.

        Raises:
            AlreadyDoneError once the operation has finished, NotCancellableError, NotFoundError
        """
        return self._send(calls.cancel_operation(operation_id))

    def list_operations(
        self,
        *,
        status: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        sandbox_id: str | None = None,
        create_time_after: datetime | str | None = None,
        create_time_before: datetime | str | None = None,
        limit: int | None = None,
        page_token: str | None = None,
    ) -> models.OperationPage:
        """A page of the tenant's operations, newest first (``GET /v1/operations``):
        ``status`` and ``type`` one or several, ``sandbox_id``, ``create_time_after``
        (inclusive) and ``create_time_before`` (exclusive), RFC 3339; ``limit`` 1 to 200.

        Raises:
            InvalidRequestError for a bad filter or a page token of another filter
        """
        return self._send(
            calls.list_operations(
                status=status,
                type=type,
                sandbox_id=sandbox_id,
                create_time_after=create_time_after,
                create_time_before=create_time_before,
                limit=limit,
                page_token=page_token,
            )
        )

    def iter_operations(self, **filters: Any) -> Iterator[models.Operation]:
        """Every operation that matches the filters of :meth:`list_operations`, page after page."""
        page_token = filters.pop("page_token", None)
        while True:
            page = self.list_operations(**filters, page_token=page_token)
            yield from page.operations
            if page.next_page_token is None:
                return
            page_token = page.next_page_token

    # Sandboxes

    def get_sandbox(self, sandbox_id: str) -> models.Sandbox:
        """A sandbox (``GET /v1/sandboxes/{id}``). Raises NotFoundError."""
        return self._send(calls.get_sandbox(sandbox_id))

    def list_sandboxes(
        self,
        *,
        state: str | Sequence[str] | None = None,
        template: str | None = None,
        label_selector: str | None = None,
        create_time_after: datetime | str | None = None,
        create_time_before: datetime | str | None = None,
        limit: int | None = None,
        page_token: str | None = None,
    ) -> models.SandboxPage:
        """A page of the tenant's sandboxes, newest first (``GET /v1/sandboxes``): ``state``
        one or several, ``template``, ``label_selector`` (Kubernetes' syntax, e.g.
        ``team=a,env in (prod,dev)``), ``create_time_after`` (inclusive) and
        ``create_time_before`` (exclusive); ``limit`` 1 to 200.

        Raises:
            InvalidRequestError for a malformed selector (``details`` name the position) or a
            page token of another filter
        """
        return self._send(
            calls.list_sandboxes(
                state=state,
                template=template,
                label_selector=label_selector,
                create_time_after=create_time_after,
                create_time_before=create_time_before,
                limit=limit,
                page_token=page_token,
            )
        )

    def iter_sandboxes(self, **filters: Any) -> Iterator[models.Sandbox]:
        """Every sandbox that matches the filters of :meth:`list_sandboxes`, page after page."""
        page_token = filters.pop("page_token", None)
        while True:
            page = self.list_sandboxes(**filters, page_token=page_token)
            yield from page.sandboxes
            if page.next_page_token is None:
                return
            page_token = page.next_page_token

    def update_sandbox_labels(
        self,
        sandbox_id: str,
        labels: Mapping[str, str],
        *,
        keys: Sequence[str] | None = None,
    ) -> models.Sandbox:
        """Changes a sandbox's labels (``PATCH /v1/sandboxes/{id}``, AIP-134), in any state.
        Without ``keys`` its labels become ``labels``; with ``keys``, each key is set from
        ``labels``, or removed when ``labels`` has none (the others stay).

        Raises:
            InvalidRequestError (a bad label, or more than 64), NotFoundError
        """
        return self._send(calls.update_sandbox_labels(sandbox_id, labels, keys))

    def delete_sandbox(self, sandbox_id: str) -> models.Operation:
        """Deletes a sandbox (``DELETE /v1/sandboxes/{id}``): 202 with the delete's Operation.
        Not retried.

        Raises:
            AlreadyDoneError when it is already deleted, NotFoundError
        """
        return self._send(calls.delete_sandbox(sandbox_id))

    def extend_sandbox(
        self,
        sandbox_id: str,
        *,
        ttl: str | None = None,
        expire_time: datetime | str | None = None,
    ) -> models.Sandbox:
        """Sets a running sandbox's lifetime (``POST /v1/sandboxes/{id}:extend``, AIP-136):
        ``ttl`` (AIP-142 duration, e.g. ``"3600s"``) from now, or ``expire_time``.

        Raises:
            NotRunningError, InvalidRequestError (past the template's ``max_ttl``), NotFoundError
        """
        return self._send(calls.extend_sandbox(sandbox_id, ttl=ttl, expire_time=expire_time))

    # The event feed

    def list_events(
        self,
        *,
        after: str | None = None,
        types: str | Sequence[str] | None = None,
        sandbox: str | None = None,
        limit: int | None = None,
        wait_s: float | None = None,
    ) -> models.EventPage:
        """A page of the tenant's events after the cursor ``after``, oldest first
        (``GET /v1/events``; docs/webhooks.md, "The event feed"): the events webhooks carry.

        Args:
            types: only these (``sandbox.running``, …); sandbox: only this sandbox's;
            limit: 1 to 500; wait_s: long-poll: when none is past the cursor, answer at the
                first, or with an empty page after this many seconds (at most 60).

        Raises:
            InvalidRequestError for a cursor of another tenant or filter
        """
        return self._send(
            calls.list_events(after=after, types=types, sandbox=sandbox, limit=limit, wait_s=wait_s)
        )

    def follow_events(
        self,
        *,
        after: str | None = None,
        types: str | Sequence[str] | None = None,
        sandbox: str | None = None,
        wait_s: float = LONG_POLL_WAIT_S,
    ) -> Iterator[models.Event]:
        """Every event from ``after`` (default: the oldest kept) on, each once, in order, one
        long-poll of ``wait_s`` seconds at a time, for as long as the caller iterates."""
        while True:
            page = self.list_events(after=after, types=types, sandbox=sandbox, wait_s=wait_s)
            yield from page.events
            after = page.next_cursor

    # The catalog and the tenant's quota

    def list_templates(self) -> list[models.Template]:
        """The template catalog (``GET /v1/templates``)."""
        return self._send(calls.list_templates()).templates

    def get_template(self, name: str) -> models.Template:
        """One template (``GET /v1/templates/{name}``). Raises NotFoundError."""
        return self._send(calls.get_template(name))

    def get_quota(self) -> models.Quota:
        """The tenant's limits and usage (``GET /v1/quota``; docs/api.md, "Tenant limits")."""
        return self._send(calls.get_quota())

    # Webhook endpoints (docs/webhooks.md)

    def create_webhook_endpoint(
        self, url: str, event_types: Sequence[str]
    ) -> models.WebhookEndpointWithSecret:
        """Registers an endpoint (``POST /v1/webhook-endpoints``); its ``secret`` is in this
        answer only. Not retried.

        Raises:
            InvalidRequestError naming the field (or the refused address), QuotaExceededError
        """
        return self._send(calls.create_webhook_endpoint(url, event_types))

    def list_webhook_endpoints(self) -> list[models.WebhookEndpoint]:
        """The tenant's endpoints, oldest first, without secrets."""
        return self._send(calls.list_webhook_endpoints()).webhook_endpoints

    def get_webhook_endpoint(self, endpoint_id: str) -> models.WebhookEndpoint:
        """One endpoint. Raises NotFoundError."""
        return self._send(calls.get_webhook_endpoint(endpoint_id))

    def delete_webhook_endpoint(self, endpoint_id: str) -> None:
        """Deletes an endpoint (204). Raises NotFoundError. Not retried."""
        self._send(calls.delete_webhook_endpoint(endpoint_id))

    def rotate_webhook_secret(self, endpoint_id: str) -> models.WebhookEndpointWithSecret:
        """A new signing secret (in this answer only); the previous one signs beside it for the
        grace period (``previous_secret_expires_at``). Not retried."""
        return self._send(calls.rotate_webhook_secret(endpoint_id))

    def recover_webhook_events(
        self, endpoint_id: str, since: datetime | str
    ) -> models.WebhookRecovery:
        """Sends again the endpoint's events since ``since`` (RFC 3339, within 7 days) that
        were refused, given up or not taken yet. Raises InvalidRequestError, NotFoundError."""
        return self._send(calls.recover_webhook_events(endpoint_id, since))

    def list_webhook_deliveries(self, endpoint_id: str) -> list[models.WebhookDelivery]:
        """The endpoint's latest 100 delivery attempts, newest first."""
        return self._send(calls.list_webhook_deliveries(endpoint_id)).deliveries

    # Sending

    def _send(self, call: Call) -> Any:
        return self._send_with_response(call)[0]

    def _send_with_response(self, call: Call) -> tuple[Any, httpx.Response]:
        """Sends ``call``, again under the retry policy (retry.py) while its failure allows.

        Returns:
            the answer read into ``call.answer``, and the last httpx response.

        Raises:
            DurableSandboxError: the last try's.
        """
        tries = 0
        while True:
            tries += 1
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params(),
                    json=call.body,
                    headers=dict(call.headers),
                )
                return read_answer(call, response), response
            except httpx.TransportError as err:
                error: DurableSandboxError = error_of_transport(call, self.base_url, err)
            except DurableSandboxError as err:
                error = err
            pause = pause_before_retry(call, self.retry, tries, error)
            if pause is None:
                raise error
            time.sleep(pause)

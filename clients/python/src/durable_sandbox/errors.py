"""The errors the client raises: one class per error code of the API (the ``code`` enum of the
OpenAPI document's ``Error`` schema, docs/api.md "Errors"), all subclasses of
:class:`DurableSandboxError`, which carries the answer's ``code``, ``message``, ``details``,
HTTP ``status`` and ``request_id`` (its ``X-Request-Id``).

An answer that is not the API's error body (a proxy in between, or a code newer than this
client) becomes :class:`UnavailableError` for 502/503/504 and :class:`InternalError` otherwise;
no answer at all becomes :class:`UnavailableError` with status 0.
"""

from __future__ import annotations

from typing import Any

import httpx

from .retry import retry_after_s


class DurableSandboxError(Exception):
    """An error answer of the API, or no answer (``status`` 0).

    Attributes:
        code: the API's code, e.g. ``invalid_request`` (snake_case, stable).
        message: what went wrong, in words a person can act on.
        details: the body's ``details``, e.g. ``operation_id`` of a failed synchronous create or
            ``limit`` of a 429; ``{}`` when it has none.
        status: the HTTP status; 0 when no answer came.
        request_id: the answer's ``X-Request-Id`` (the key to the API's logs), or None.
        retry_after_s: the answer's ``Retry-After`` in seconds (an HTTP date is turned into the
            seconds until it), or None.
    """

    code: str = "internal"

    def __init__(
        self,
        message: str,
        *,
        status: int,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.details: dict[str, Any] = details if details is not None else {}
        self.request_id = request_id
        self.retry_after_s = retry_after_s

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.message}"


class InvalidRequestError(DurableSandboxError):
    """400 ``invalid_request``: the request is invalid (for a create, maybe in the node's view)."""

    code = "invalid_request"


class UnauthenticatedError(DurableSandboxError):
    """401 ``unauthenticated``: no token, or one the API refuses (``details.reason`` says why)."""

    code = "unauthenticated"


class NotFoundError(DurableSandboxError):
    """404 ``not_found``: no such resource for this tenant."""

    code = "not_found"


class UnsupportedMediaTypeError(DurableSandboxError):
    """415 ``unsupported_media_type``: a body that is not JSON."""

    code = "unsupported_media_type"


class MethodNotAllowedError(DurableSandboxError):
    """405 ``method_not_allowed``."""

    code = "method_not_allowed"


class AlreadyDoneError(DurableSandboxError):
    """409 ``already_done``: the operation has finished, or the sandbox is already deleted."""

    code = "already_done"


class IdempotencyConflictError(DurableSandboxError):
    """409 ``idempotency_conflict``: the Idempotency-Key was used with another body, or its
    first create could not start."""

    code = "idempotency_conflict"


class NotCancellableError(DurableSandboxError):
    """409 ``not_cancellable``: the operation cannot be cancelled (a delete)."""

    code = "not_cancellable"


class NotRunningError(DurableSandboxError):
    """409 ``not_running``: the sandbox is not running (an extend)."""

    code = "not_running"


class InternalError(DurableSandboxError):
    """500 ``internal``, or an answer without the API's error body."""

    code = "internal"


class PodFailedError(DurableSandboxError):
    """``pod_failed``: the sandbox's pod failed (a synchronous create)."""

    code = "pod_failed"


class OperationCancelledError(DurableSandboxError):
    """``cancelled``: the create was cancelled (a synchronous create)."""

    code = "cancelled"


class UnavailableError(DurableSandboxError):
    """503 ``unavailable``: the API cannot use a dependency now; or no answer (status 0)."""

    code = "unavailable"


class QuotaExceededError(DurableSandboxError):
    """429 ``quota_exceeded``: a held limit of the tenant (``details.limit``: sandboxes, cpu, …)."""

    code = "quota_exceeded"


class PodNeverReadyError(DurableSandboxError):
    """503 ``pod_never_ready``: the pod was not ready within the create's budget."""

    code = "pod_never_ready"


class NoNodeAvailableError(DurableSandboxError):
    """503 ``no_node_available``: every node tried refused the sandbox."""

    code = "no_node_available"


class RateLimitedError(DurableSandboxError):
    """429 ``rate_limited``: creates a second, or waits at once, past the tenant's limit."""

    code = "rate_limited"


class CursorExpiredError(DurableSandboxError):
    """410 ``cursor_expired``: the event feed's cursor is older than the oldest event kept
    (``EVENT_RETENTION_HOURS``); read the feed again from its start."""

    code = "cursor_expired"


#: Each error code of the API and its class (tests/test_models.py checks it against the
#: document's enum).
ERROR_CLASSES: dict[str, type[DurableSandboxError]] = {
    cls.code: cls
    for cls in (
        InvalidRequestError,
        UnauthenticatedError,
        NotFoundError,
        UnsupportedMediaTypeError,
        MethodNotAllowedError,
        AlreadyDoneError,
        IdempotencyConflictError,
        NotCancellableError,
        NotRunningError,
        InternalError,
        PodFailedError,
        OperationCancelledError,
        UnavailableError,
        QuotaExceededError,
        PodNeverReadyError,
        NoNodeAvailableError,
        RateLimitedError,
        CursorExpiredError,
    )
}


def error_of_answer(response: httpx.Response, what: str) -> DurableSandboxError:
    """The error of a non-2xx answer.

    Args:
        response: the answer (its body read).
        what: the request, e.g. ``GET /v1/sandboxes``, named when the body says nothing.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    common: dict[str, Any] = {
        "status": response.status_code,
        "request_id": response.headers.get("x-request-id"),
        "retry_after_s": retry_after_s(response.headers.get("retry-after")),
    }
    code, message, details = error.get("code"), error.get("message"), error.get("details")
    cls = ERROR_CLASSES.get(code) if isinstance(code, str) else None
    if cls is not None:
        return cls(
            message if isinstance(message, str) else f"{what} answered {response.status_code}",
            details=details if isinstance(details, dict) else {},
            **common,
        )
    cls = UnavailableError if response.status_code in (502, 503, 504) else InternalError
    if isinstance(code, str) and isinstance(message, str):
        return cls(f"{code}: {message}", **common)
    return cls(f"{what} answered {response.status_code} without the API's error body", **common)

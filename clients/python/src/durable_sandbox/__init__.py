"""The Python client of the durable-sandbox API (docs/python-client.md).

- :class:`Client` (sync) and :class:`AsyncClient` (asyncio), on httpx, with the same methods.
- :mod:`durable_sandbox.models`: pydantic v2 models generated from the API's OpenAPI document.
- :mod:`durable_sandbox.errors`: one exception class per error code of the API.
- :func:`verify_webhook`: checks a webhook delivery's Standard Webhooks signature.
"""

from . import models
from .async_client import AsyncClient
from .calls import new_idempotency_key
from .client import Client
from .errors import (
    ERROR_CLASSES,
    AlreadyDoneError,
    CursorExpiredError,
    DurableSandboxError,
    IdempotencyConflictError,
    InternalError,
    InvalidRequestError,
    MethodNotAllowedError,
    NoNodeAvailableError,
    NotCancellableError,
    NotFoundError,
    NotRunningError,
    OperationCancelledError,
    PodFailedError,
    PodNeverReadyError,
    QuotaExceededError,
    RateLimitedError,
    UnauthenticatedError,
    UnavailableError,
    UnsupportedMediaTypeError,
)
from .retry import DEFAULT_RETRY_POLICY, RetryPolicy
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "DEFAULT_RETRY_POLICY",
    "ERROR_CLASSES",
    "AlreadyDoneError",
    "AsyncClient",
    "Client",
    "DurableSandboxError",
    "IdempotencyConflictError",
    "InternalError",
    "InvalidRequestError",
    "MethodNotAllowedError",
    "NoNodeAvailableError",
    "NotCancellableError",
    "NotFoundError",
    "NotRunningError",
    "OperationCancelledError",
    "PodFailedError",
    "PodNeverReadyError",
    "QuotaExceededError",
    "RateLimitedError",
    "CursorExpiredError",
    "RetryPolicy",
    "UnauthenticatedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "WebhookVerificationError",
    "models",
    "new_idempotency_key",
    "verify_webhook",
]

"""Verifying a webhook delivery of the API (docs/webhooks.md): the API signs each delivery with
the Standard Webhooks scheme (https://www.standardwebhooks.com/; src/webhooks/signing.ts signs with
the specification's `standardwebhooks` library): headers ``webhook-id`` (the event's id),
``webhook-timestamp`` (Unix seconds) and ``webhook-signature`` (``v1,<base64 HMAC-SHA256>`` of
``<id>.<timestamp>.<body>``, one per secret while a rotation's grace period lasts). This module
checks them with the specification's Python library and reads the body into an
:class:`~durable_sandbox.models.Event`.
"""

from __future__ import annotations

from collections.abc import Mapping

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from .models import Event

__all__ = ["WebhookVerificationError", "verify_webhook"]


def verify_webhook(secret: str, body: bytes | str, headers: Mapping[str, str]) -> Event:
    """Checks a delivery's signature and reads its event.

    Args:
        secret: the endpoint's signing secret, ``whsec_…`` (the ``secret`` of
            ``create_webhook_endpoint`` or ``rotate_webhook_secret``).
        body: the request body exactly as received (bytes; not re-serialized JSON).
        headers: the request's headers (any case), with ``webhook-id``,
            ``webhook-timestamp`` and ``webhook-signature``.

    Returns:
        the event: ``id`` (de-duplicate on it: delivery is at least once), ``type``,
        ``timestamp`` and ``data`` (the sandbox).

    Raises:
        WebhookVerificationError: a header is missing, no signature matches the secret, or the
            timestamp is more than 5 minutes off (the specification's tolerance).
        pydantic.ValidationError: a verified body that is not an event of the document.
    """
    payload = Webhook(secret).verify(body, dict(headers))
    return Event.model_validate({**payload, "id": _header(headers, "webhook-id")})


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None

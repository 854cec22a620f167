"""When the client sends a request again, and after how long.

Only what is safe to repeat is repeated: reads (and idempotent changes such as a label patch or
an extend), and creates under their one Idempotency-Key (the API answers a repeat of the key and
body with the first create's operation; docs/api.md). The table :data:`RETRYABLE` says which
failures allow a retry; between tries the client waits with exponential back-off and full
jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"), and never less than the
answer's ``Retry-After`` (RFC 9110 section 10.2.3: seconds, or an HTTP date). When the server
asks for a longer pause than :attr:`RetryPolicy.max_delay_s`, the error is raised at once
rather than retried early.
"""

from __future__ import annotations

import email.utils
import random as random_module
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .errors import DurableSandboxError

#: What a request is, for retries: a read (or an idempotent change), or a create under its key.
Repeatable = Literal["read", "create"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a request is tried.

    Attributes:
        attempts: tries in all, the first included; 1 turns retries off.
        initial_delay_s: the back-off's first ceiling, in seconds; each retry doubles it.
        max_delay_s: the longest pause between two tries, in seconds; an answer whose
            ``Retry-After`` asks for longer is raised instead of retried.
    """

    attempts: int = 4
    initial_delay_s: float = 0.25
    max_delay_s: float = 10.0


#: Four tries, back-off ceilings of 0.25 s, 0.5 s and 1 s, Retry-After honoured up to 10 s.
DEFAULT_RETRY_POLICY = RetryPolicy()

#: (status, code) -> the kinds of request that failure lets the client send again. Status 0 is
#: no answer (connection refused or reset, a timeout); 502 and 504 are a gateway's: the outcome
#: is unknown, so only what is safe to repeat is. 429 is a refusal before anything was done.
#: A 503 ``unavailable`` is the API's verdict on a create (a create whose workflow could not
#: start is marked failed, and its key answers ``idempotency_conflict`` from then on), so only
#: reads repeat it, except the 503 of authentication (``details.reason`` ``jwks_unavailable``):
#: it comes before the create is looked at.
RETRYABLE: dict[tuple[int, str], frozenset[str]] = {
    (0, "unavailable"): frozenset({"read", "create"}),
    (502, "unavailable"): frozenset({"read", "create"}),
    (504, "unavailable"): frozenset({"read", "create"}),
    (429, "rate_limited"): frozenset({"read", "create"}),
    (429, "quota_exceeded"): frozenset({"read", "create"}),
    (503, "unavailable"): frozenset({"read"}),
    (503, "unavailable/jwks_unavailable"): frozenset({"read", "create"}),
}


def is_retryable(error: DurableSandboxError, repeatable: Repeatable | None) -> bool:
    """Whether a try of a ``repeatable`` request that failed with ``error`` may be sent again."""
    if repeatable is None:
        return False
    reason = error.details.get("reason")
    keys = [(error.status, error.code)]
    if isinstance(reason, str):
        keys.insert(0, (error.status, f"{error.code}/{reason}"))
    for key in keys:
        if key in RETRYABLE:
            return repeatable in RETRYABLE[key]
    return False


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header in seconds: delay-seconds as they are, an HTTP date as the
    seconds from ``now`` until it (0 when past); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now if now is not None else datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def retry_delay_s(
    policy: RetryPolicy,
    retry: int,
    error: DurableSandboxError,
    random: Callable[[], float] = random_module.random,
) -> float | None:
    """The pause before retry number ``retry`` (1 for the second try), in seconds: a random
    share of the back-off ceiling, at least the answer's ``Retry-After``; None when the
    ``Retry-After`` is longer than ``policy.max_delay_s`` (then the error is raised)."""
    ceiling = min(policy.max_delay_s, policy.initial_delay_s * 2 ** (retry - 1))
    asked = error.retry_after_s or 0.0
    if asked > policy.max_delay_s:
        return None
    return max(random() * ceiling, asked)

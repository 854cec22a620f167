"""What both clients do with an answer or a failed try, without doing any I/O: read a 2xx body
into its model, turn anything else into the error of its code (errors.py), and decide whether
and after how long to try again (retry.py); plus the long-poll wait's rule for pausing.
"""

from __future__ import annotations

from typing import Any

import httpx

from .calls import Call
from .errors import DurableSandboxError, InternalError, UnavailableError, error_of_answer
from .retry import RetryPolicy, is_retryable, retry_delay_s

#: How long one long-poll asks the API to wait for a change, in seconds (docs/api.md, "Long-poll").
LONG_POLL_WAIT_S = 30

#: The shortest pause after an immediate, unchanged answer of a long-poll, in seconds.
MIN_POLL_INTERVAL_S = 0.5


def read_answer(call: Call, response: httpx.Response) -> Any:
    """The 2xx answer's body read into ``call.answer``; for a 304 to a read that named a tag
    (``If-None-Match``), ``call.not_modified``: the resource as the caller last saw it.

    Raises:
        DurableSandboxError: the subclass of the answer's code for a non-2xx answer;
            :class:`InternalError` for a 2xx body that is not JSON or not the document's shape.
    """
    if response.status_code == 304 and call.not_modified is not None:
        return call.not_modified
    if not response.is_success:
        raise error_of_answer(response, call.what)
    if call.answer is None:
        return None
    try:
        return call.parse(response.json())
    except ValueError as err:
        raise InternalError(
            f"{call.what} answered {response.status_code} with a body that is not the "
            f"document's: {err}",
            status=response.status_code,
            request_id=response.headers.get("x-request-id"),
        ) from err


def error_of_transport(call: Call, base_url: str, err: httpx.TransportError) -> UnavailableError:
    """The error of a try that got no answer (refused, reset, timed out): status 0."""
    return UnavailableError(f"{call.what}: cannot reach {base_url}: {err!r}", status=0)


def pause_before_retry(
    call: Call, policy: RetryPolicy, tries: int, error: DurableSandboxError
) -> float | None:
    """Seconds to pause before sending ``call`` again after try number ``tries`` failed with
    ``error``; None when it is not sent again (then ``error`` is raised)."""
    if tries >= policy.attempts or not is_retryable(error, call.repeatable):
        return None
    return retry_delay_s(policy, tries, error)


def operation_state(operation: Any) -> tuple[Any, ...]:
    """What a long-poll answers at the change of: status, phase, done."""
    return (operation.status.root, operation.phase, operation.done)


def poll_pause_s(retry_after: str | None) -> float:
    """The pause after a long-poll that came back at once without a change (an API or proxy
    that ignores ``wait``): ``Retry-After`` seconds, at least :data:`MIN_POLL_INTERVAL_S`."""
    try:
        seconds = float(retry_after) if retry_after is not None else 0.0
    except ValueError:
        seconds = 0.0
    return max(MIN_POLL_INTERVAL_S, seconds)

"""Each retry of the client, provoked for real and proven by what the API saw: the requests
that arrived (tests/front_door.py: their Idempotency-Key and arrival time) and the API's own
request log (their status), matched by the X-Request-Id the API gave each."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from durable_sandbox import ERROR_CLASSES, Client, RateLimitedError, RetryPolicy, UnavailableError
from durable_sandbox.retry import is_retryable, retry_after_s

from .conftest import SMALL, logged_status
from .front_door import FrontDoor
from .stack import Stack


def test_a_rate_limited_create_is_sent_again_with_its_key_after_retry_after(
    stack: Stack, front_door: FrontDoor
) -> None:
    with Client(front_door.url, "slow-token") as slow:
        slow.create_sandbox(SMALL)  # takes the one token of tenant slow's bucket
        operation = slow.create_sandbox(SMALL)

    creates = [a for a in front_door.arrivals if a.method == "POST"][1:]
    assert [a.status for a in creates] == [429, 202]
    assert [logged_status(stack, a) for a in creates] == [429, 202]
    first, retry = creates
    assert first.headers["idempotency-key"] == retry.headers["idempotency-key"]
    asked = float(first.answer_headers["retry-after"])
    assert asked >= 1
    assert retry.at - first.at >= asked
    assert retry.answer_headers["location"] == f"/v1/operations/{operation.id}"


def test_a_create_is_not_sent_again_when_retry_after_exceeds_the_policy(
    stack: Stack, front_door: FrontDoor
) -> None:
    policy = RetryPolicy(attempts=4, initial_delay_s=0.25, max_delay_s=0.5)
    with Client(front_door.url, "slow-token") as patient:
        patient.create_sandbox(SMALL)  # once tenant slow's bucket holds a token again, takes it
    seen = len(front_door.arrivals)
    with Client(front_door.url, "slow-token", retry=policy) as hasty:
        with pytest.raises(RateLimitedError) as raised:
            hasty.create_sandbox(SMALL)
    assert raised.value.status == 429 and raised.value.retry_after_s >= 1
    assert raised.value.details["limit"] == "creates_per_second"
    assert [a.status for a in front_door.arrivals[seen:]] == [429]


def test_a_read_refused_503_is_sent_again_after_retry_after(
    stack: Stack, front_door: FrontDoor
) -> None:
    token = stack.key_set.token("dev")
    stack.key_set.failures = 1
    with Client(front_door.url, token) as jwt_client:
        quota = jwt_client.get_quota()
    assert quota.tenant == "dev"

    first, retry = front_door.arrivals
    assert [first.status, retry.status] == [503, 200]
    assert [logged_status(stack, first), logged_status(stack, retry)] == [503, 200]
    assert retry.at - first.at >= float(first.answer_headers["retry-after"]) >= 1
    assert [status for _, status in stack.key_set.fetches[-2:]] == [500, 200]


def test_a_create_refused_503_by_authentication_is_sent_again_with_its_key(
    stack: Stack, front_door: FrontDoor
) -> None:
    token = stack.key_set.token("dev")
    stack.key_set.failures = 1
    with Client(front_door.url, token) as jwt_client:
        operation = jwt_client.create_sandbox(SMALL)

    first, retry = front_door.arrivals
    assert [first.status, retry.status] == [503, 202]
    assert [logged_status(stack, first), logged_status(stack, retry)] == [503, 202]
    assert first.headers["idempotency-key"] == retry.headers["idempotency-key"]
    assert retry.at - first.at >= float(first.answer_headers["retry-after"])
    assert retry.answer_headers["location"] == f"/v1/operations/{operation.id}"


def test_a_delete_is_not_sent_again_after_503(stack: Stack, front_door: FrontDoor) -> None:
    token = stack.key_set.token("dev")
    stack.key_set.failures = 1
    with Client(front_door.url, token) as jwt_client, pytest.raises(UnavailableError) as raised:
        jwt_client.delete_sandbox("sbx_" + "a" * 26)
    assert raised.value.details["reason"] == "jwks_unavailable"
    assert [a.status for a in front_door.arrivals] == [503]


def test_no_answer_is_retried_then_raised_as_unavailable_with_status_0(stack: Stack) -> None:
    door = FrontDoor(stack.url)
    url = door.url
    door.close()  # nothing listens there now
    policy = RetryPolicy(attempts=2, initial_delay_s=0.01, max_delay_s=0.1)
    with Client(url, "dev-token", retry=policy) as gone, pytest.raises(UnavailableError) as raised:
        gone.get_quota()
    assert raised.value.status == 0


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 12, 6, 12, 0, 0, tzinfo=timezone.utc)
    assert retry_after_s("5", now) == 5
    assert retry_after_s(format_datetime(now + timedelta(seconds=7), usegmt=True), now) == 7
    assert retry_after_s(format_datetime(now - timedelta(seconds=7), usegmt=True), now) == 0
    assert retry_after_s("soon", now) is None
    assert retry_after_s(None, now) is None


@pytest.mark.parametrize(
    ("status", "code", "reason", "read", "create"),
    [
        (0, "unavailable", None, True, True),
        (502, "unavailable", None, True, True),
        (429, "rate_limited", None, True, True),
        (429, "quota_exceeded", None, True, True),
        (503, "unavailable", None, True, False),
        (503, "unavailable", "jwks_unavailable", True, True),
        (503, "no_node_available", None, False, False),
        (409, "idempotency_conflict", None, False, False),
        (500, "internal", None, False, False),
    ],
)
def test_which_failures_are_sent_again(
    status: int, code: str, reason: str | None, read: bool, create: bool
) -> None:
    error = ERROR_CLASSES[code]("x", status=status, details={"reason": reason} if reason else {})
    assert (is_retryable(error, "read"), is_retryable(error, "create")) == (read, create)
    assert not is_retryable(error, None)

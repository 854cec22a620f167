"""The operation wait names the version it last saw (docs/api.md, "Long-poll"), proven by what
the API saw: each long-poll's ``If-None-Match`` as it arrived at the recording front door
(tests/front_door.py), against the ``ETag`` of the answer before, and the API's own request log
for the 304 that the wait carried on after.

The wait's long-polls ask for half a second each (``wait_s=0.5``): the simulated node gives a
pod its IP after 1.5 s (tests/stack.py, NODE_DELAY_MS), so at least one long-poll ends at its
timeout, 304, while the create waits for its pod.
"""

from __future__ import annotations

from durable_sandbox import AsyncClient, Client, models

from .conftest import SMALL, logged_status
from .front_door import Arrival, FrontDoor
from .stack import Stack

#: Each long-poll's wait, in seconds: a third of the simulated node's delay (1.5 s).
SHORT_WAIT_S = 0.5


def reads_of(front_door: FrontDoor, operation_id: str) -> list[Arrival]:
    """The reads of the operation that arrived, in order."""
    path = f"/v1/operations/{operation_id}"
    return [a for a in front_door.arrivals if a.method == "GET" and a.path == path]


def assert_each_read_names_the_tag_before(reads: list[Arrival]) -> None:
    """The first read is plain; every later one names the ETag the read before was answered."""
    assert len(reads) >= 3, f"{len(reads)} reads: the plain read and at least two long-polls"
    assert "if-none-match" not in reads[0].headers, "the first read is a plain read"
    for i, read in enumerate(reads):
        assert read.answer_headers.get("etag"), f"read {i} was answered without an ETag"
        if i > 0:
            assert read.headers.get("if-none-match") == reads[i - 1].answer_headers["etag"], (
                f"read {i} did not name the ETag of read {i - 1}"
            )


def assert_a_304_was_carried_on(
    stack: Stack, reads: list[Arrival], updates: list[models.Operation]
) -> None:
    """A long-poll answered 304 (so says the API's log too), and the wait handed on the
    operation as last seen, still running, then went on to the end."""
    statuses = [read.status for read in reads]
    assert 304 in statuses, f"no long-poll ended at its timeout: {statuses}"
    not_modified = statuses.index(304)
    assert logged_status(stack, reads[not_modified]) == 304
    assert len(updates) == len(reads)
    assert updates[not_modified] == updates[not_modified - 1]
    assert not updates[not_modified].done
    assert updates[-1].done


def test_a_wait_names_the_etag_it_last_saw_and_carries_on_after_a_304(
    stack: Stack, front_door: FrontDoor
) -> None:
    updates: list[models.Operation] = []
    with Client(front_door.url, "dev-token") as client:
        operation = client.create_sandbox(SMALL)
        done = client.wait_for_operation(
            operation.id, on_update=updates.append, wait_s=SHORT_WAIT_S
        )
    assert done.status.root == "succeeded", done.error

    reads = reads_of(front_door, operation.id)
    assert_each_read_names_the_tag_before(reads)
    assert_a_304_was_carried_on(stack, reads, updates)


async def test_an_async_wait_names_the_etag_it_last_saw_and_carries_on_after_a_304(
    stack: Stack, front_door: FrontDoor
) -> None:
    updates: list[models.Operation] = []
    async with AsyncClient(front_door.url, "dev-token") as client:
        operation = await client.create_sandbox(SMALL)
        done = await client.wait_for_operation(
            operation.id, on_update=updates.append, wait_s=SHORT_WAIT_S
        )
    assert done.status.root == "succeeded", done.error

    reads = reads_of(front_door, operation.id)
    assert_each_read_names_the_tag_before(reads)
    assert_a_304_was_carried_on(stack, reads, updates)

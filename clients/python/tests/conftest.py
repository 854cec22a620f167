"""Session fixtures: one embedded stack for the whole run (tests/stack.py), and clients of it;
a recording front door before it (tests/front_door.py) and the API's log of a request."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import pytest

from durable_sandbox import AsyncClient, Client

from .front_door import Arrival, FrontDoor
from .stack import Stack, start_stack

#: A create every test may use: the default catalog's template, small resources.
SMALL = {"template": "base", "resources": {"cpu": "250m", "memory_mib": 256, "disk_mib": 2048}}


def refused(template: str) -> dict:
    """A create the node refuses: its disk is below the image's root filesystem (451 MiB);
    ``template`` one of tests/stack.py's REFUSED_TEMPLATES, each used by one test."""
    return {"template": template, "resources": {"cpu": "250m", "memory_mib": 256, "disk_mib": 300}}


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    yield from start_stack()


@pytest.fixture(scope="session")
def client(stack: Stack) -> Iterator[Client]:
    with Client(stack.url, "dev-token") as c:
        yield c


@pytest.fixture(scope="session")
async def async_client(stack: Stack) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(stack.url, "dev-token") as c:
        yield c


#: How long the API may take to write a request's log line after answering it, in seconds.
LOG_TIMEOUT_S = 10


@pytest.fixture()
def front_door(stack: Stack) -> Iterator[FrontDoor]:
    door = FrontDoor(stack.url)
    yield door
    door.close()


def logged_status(stack: Stack, arrival: Arrival) -> int:
    """The status the API's request log gives the request that arrived as ``arrival``."""
    request_id = arrival.answer_headers["x-request-id"]
    deadline = time.monotonic() + LOG_TIMEOUT_S  # the log line is written as the answer ends
    while True:
        entries = [e for e in stack.requests() if e.get("request_id") == request_id]
        if entries or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(entries) == 1, f"request {request_id} is not once in the API's request log"
    return entries[0]["status"]

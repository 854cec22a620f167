"""Session fixtures: one embedded stack for the whole run (tests/stack.py), and clients of it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from durable_sandbox import AsyncClient, Client

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

"""The memory store on a real PostgreSQL (a throwaway cluster, tests/postgres_server.py): the
same contract as the other backends, two workers' stores sharing items, the DSN's password kept
out of what the store says, and one user's two conversations through it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from durable_teams.memory.postgres_store import PostgresStore
from durable_teams.memory.store import Store

from .memory_contract import HostileContract, StoreContract
from .memory_scenario import one_user_two_threads
from .postgres_server import postgres_url_fixture  # noqa: F401 - the fixture

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


@pytest.fixture
async def store(postgres_url: str) -> AsyncIterator[Store]:
    store = PostgresStore(postgres_url)
    await store._delete_prefix(())  # each test starts empty
    yield store
    await store.close()


class TestPostgres(StoreContract, HostileContract):
    pass


async def test_two_workers_share_items_and_create_the_table_once(postgres_url: str) -> None:
    stores = [PostgresStore(postgres_url) for _ in range(4)]
    try:
        await asyncio.gather(*(s.put(("shared",), f"k{n}", {"n": n}) for n, s in enumerate(stores)))
        await asyncio.gather(*(s.put(("shared",), "same", {"by": n}) for n, s in enumerate(stores)))
        seen = await stores[0].search(("shared",), limit=100)
        assert sorted(i.key for i in seen) == ["k0", "k1", "k2", "k3", "same"]
    finally:
        for s in stores:
            await s.close()


async def test_the_password_never_shows_and_a_lost_connection_is_made_again(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    try:
        assert "secret" not in store.description and ":***@" in store.description
        await store.put(("a",), "k", {"v": 1})
        await store._conn.close()  # the server went away between two calls
        assert (await store.get(("a",), "k")) is not None
    finally:
        await store.close()
    wrong = PostgresStore(postgres_url.replace(":secret@", ":wrong-password@"))
    with pytest.raises(Exception) as refused:
        await wrong.get(("a",), "k")
    assert "wrong-password" not in str(refused.value) and "password authentication failed" in str(refused.value)


async def test_one_user_two_threads_share_a_preference_on_postgres(
        client: Client, task_queue: str, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    try:
        await one_user_two_threads(client, task_queue, store)
    finally:
        await store.close()

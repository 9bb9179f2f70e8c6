"""The memory scenario both store backends run end to end (tests/test_memory_conversations.py
on SQLite, tests/test_memory_postgres.py on PostgreSQL): one user's two conversations on two
threads, the first storing a preference through a tool and the second reading it, with a write
whose reply is lost once."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import Client

from durable_teams.memory import memory_tools
from durable_teams.memory.store import Item, Namespace, Row, Store
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.teams.tools import tool
from durable_teams.worker.scripted import ScriptedModel, call, say
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message, ModelRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

# the built-in tools, retried quickly (the store below fails once after writing)
QUICK = [tool(t, idempotent=True, retry_interval_seconds=0.01) for t in memory_tools.MEMORY_TOOLS]


def assistant_script(req: ModelRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Message:
    last = messages[-1]
    if last["role"] == "tool":
        return say("Noted." if last["content"].startswith("Remembered") else f"You told me: {last['content']}")
    if "remember" in (last["content"] or ""):
        return call("remember", text="Favorite color: blue", key="favorite_color")
    return call("recall", query="favorite color")


class FailsOnceAfterWriting(Store):
    """A store whose first write commits and then loses its reply (as a connection dropped
    after COMMIT would): the activity fails and Temporal runs it again."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.failed = inner, False

    @property
    def description(self) -> str:
        return self.inner.description

    async def _put(self, namespace: Namespace, key: str, value: str, vector: list[float] | None) -> None:
        await self.inner._put(namespace, key, value, vector)
        if not self.failed:
            self.failed = True
            raise ConnectionError("server closed the connection unexpectedly")

    async def _get(self, namespace: Namespace, key: str) -> Item | None:
        return await self.inner._get(namespace, key)

    async def _delete(self, namespace: Namespace, key: str) -> bool:
        return await self.inner._delete(namespace, key)

    async def _delete_prefix(self, prefix: Namespace) -> int:
        return await self.inner._delete_prefix(prefix)

    async def _rows(self, prefix: Namespace) -> list[Row]:
        return await self.inner._rows(prefix)


async def one_user_two_threads(client: Client, task_queue: str, store: Store) -> None:
    """The scenario both backends run."""
    team = Swarm([Agent("assistant", "Remember what the user tells you.", tools=QUICK)], name="helpdesk").compile()
    flaky = FailsOnceAfterWriting(store)
    user = f"ana-{uuid.uuid4().hex[:6]}"
    answers = []
    async with running_worker(client, task_queue, [team], ScriptedModel(assistant_script), memory=flaky):
        for n, text in enumerate(["Please remember: my favorite color is blue.", "What is my favorite color?"]):
            result = await client.execute_workflow(
                TeamWorkflow.run, ConversationInput(team=team.spec, task=text, context={"user_id": user}),
                id=f"memory-thread-{n}-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
            answers.append(result.answer)
    assert flaky.failed  # the first write's reply was lost and the write ran again
    assert answers == ["Noted.", "You told me: - (favorite_color) Favorite color: blue"]
    items = await store.search(("users", user))
    assert [(i.namespace, i.key, i.value) for i in items] == [
        (("users", user, "memories"), "favorite_color", {"text": "Favorite color: blue"})]

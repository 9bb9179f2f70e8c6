"""Raw JSON-RPC calls to the A2A door for tests (the support team's card, a message, a call
that must be refused with a code) and what a task's push workflow did, to say why a push
test failed."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.team_cards import card_of
from durable_teams.gateway.doors.a2a.push_configs import push_id

CARDS = [card_of(support.build().compile().spec)]


def said(text: str, **more: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **more}


class Rpc:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def raw(self, body: bytes) -> dict[str, Any]:
        answer = await self.http.post("/a2a/support", content=body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        answer = await self.http.post("/a2a/support", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                            "params": params})
        assert answer.status_code == 200, answer.text
        return answer.json()

    async def task(self, message: dict[str, Any]) -> dict[str, Any]:
        answer = await self.call("SendMessage", {"message": message})
        assert "result" in answer, answer
        return answer["result"]["task"]

    async def refused(self, method: str, params: Any, code: int) -> str:
        answer = await self.call(method, params)
        assert answer.get("error", {}).get("code") == code, (params if len(str(params)) < 300 else method, answer)
        return str(answer["error"]["message"])


async def push_activities(client: Client, task: str) -> list[tuple[str, int, str]]:
    """What the task's push workflow scheduled and its activities returned or failed with."""
    history = await client.get_workflow_handle(push_id(task)).fetch_history()
    seen = []
    for event in history.events:
        for kind in ("scheduled", "completed", "failed", "timed_out"):
            field = f"activity_task_{kind}_event_attributes"
            if event.HasField(field):  # type: ignore[arg-type]
                seen.append((kind, event.event_id, str(getattr(event, field))[:300]))
    return seen

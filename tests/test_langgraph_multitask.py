"""`multitask_strategy` on a busy thread, through the real `langgraph-sdk` client: "reject" is a
409, "enqueue" runs the new turn after the running one, "interrupt" cancels the running turn,
"rollback" rewinds the thread to before it (its message is gone from the thread)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError
from temporalio.client import Client

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import TEAM, GatedModel

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def said(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"]]


async def test_each_strategy_on_a_busy_thread(client: Client, task_queue: str) -> None:
    model = GatedModel()  # every model call waits for the gate: a turn stays running until it opens
    async with running_worker(client, task_queue, [TEAM], model):
        async with running_gateway(client, task_queue, teams=["echo"]) as url:
            lg = get_client(url=f"{url}/langgraph", api_key=None)
            queued = (await lg.threads.create())["thread_id"]
            first = await lg.runs.create(queued, "echo", input=human("first"))
            with pytest.raises(ConflictError, match="is running run t1"):
                await lg.runs.create(queued, "echo", input=human("refused"))
            second = await lg.runs.create(queued, "echo", input=human("second"), multitask_strategy="enqueue")
            waiting = await lg.runs.get(queued, second["run_id"])
            model.gate.set()
            enqueued = await lg.runs.join(queued, second["run_id"])
            first_done = await lg.runs.get(queued, first["run_id"])
            model.gate.clear()

            cut = (await lg.threads.create())["thread_id"]
            await lg.runs.create(cut, "echo", input=human("slow"))
            replaced = await lg.runs.create(cut, "echo", input=human("instead"), multitask_strategy="interrupt")
            model.gate.set()
            interrupted = await lg.runs.join(cut, replaced["run_id"])
            cut_runs = await lg.runs.list(cut)

            rewound = (await lg.threads.create())["thread_id"]
            await lg.runs.wait(rewound, "echo", input=human("kept"))
            model.gate.clear()
            await lg.runs.create(rewound, "echo", input=human("dropped"))
            instead = await lg.runs.create(rewound, "echo", input=human("retold"), multitask_strategy="rollback")
            model.gate.set()
            rolled = await lg.runs.join(rewound, instead["run_id"])
            rewound_runs = await lg.runs.list(rewound)

    assert (first["run_id"], second["run_id"], waiting["status"]) == ("t1", "t2", "pending")
    assert said(enqueued) == ["first", "heard: first", "second", "heard: second"]
    assert first_done["status"] == "success"
    assert replaced["run_id"] == "t2" and said(interrupted)[0] == "slow" and said(interrupted)[-2:] == [
        "instead", "heard: instead"]
    assert [(r["run_id"], r["status"]) for r in cut_runs] == [("t2", "success"), ("t1", "interrupted")]
    assert instead["run_id"] == "t2"
    assert said(rolled) == ["kept", "heard: kept", "retold", "heard: retold"]  # "dropped" is gone
    assert [(r["run_id"], r["status"]) for r in rewound_runs] == [("t2", "success"), ("t1", "success")]

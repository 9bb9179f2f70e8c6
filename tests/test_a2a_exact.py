"""The A2A door exact to its protocol (issue 49, item 7), over raw JSON-RPC: one id per task
(`::01` is no alias of `::1`), a message whose taskId and contextId name different threads
refused as the a2a-sdk's own handler refuses it, the spec's required fields, a text over a
turn's size a clear -32602, no request refused with a traceback in the gateway's log (bodies
nested deep, numbers too long, bytes that are no UTF-8, params of the wrong types), and push
notifications that follow the conversation's history (a state shorter than a poll is told)."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.gateway.core.turn_tasks import NotATask, parse_task_id
from durable_teams.gateway.doors.a2a.push_configs import PushOptions
from durable_teams.worker.scripted import ScriptedModel

from .a2a_rpc import CARDS, Rpc, push_activities, said
from .conftest import running_worker
from .gateway_helpers import running_gateway
from .push_receiver import receiving
from .waiting import NotYet, until

pytestmark = pytest.mark.workflow

INVALID_PARAMS, TASK_NOT_FOUND, PARSE_ERROR = -32602, -32001, -32700


@pytest.mark.pure
@pytest.mark.parametrize("alias", ["t::01", "t::001", "t::１", "t::+1", "t:: 1", "t::1 "])
def test_a_task_answers_to_one_id_only(alias: str) -> None:
    assert parse_task_id("t::1") == ("t", 1)
    with pytest.raises(NotATask):
        parse_task_id(alias)


@pytest.mark.slow
async def test_the_protocol_s_rules_hold_and_no_refusal_leaves_a_traceback(
        client: Client, task_queue: str, caplog: pytest.LogCaptureFixture) -> None:
    support.REFUNDS.clear()
    caplog.set_level(logging.INFO)
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            running_gateway(client, task_queue, cards=CARDS) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Content-Type": "application/json"}) as http:
        rpc = Rpc(http)
        asked = await rpc.task(said(support.QUESTION))
        other = await rpc.task(said(support.QUESTION))
        assert asked["status"]["state"] == other["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        # ids: one task, one id
        for alias in (asked["id"].replace("::1", "::01"), asked["id"].replace("::1", "::１")):
            await rpc.refused("GetTask", {"id": alias}, TASK_NOT_FOUND)
            await rpc.refused("SendMessage", {"message": said("Order 4711", taskId=alias)}, TASK_NOT_FOUND)
        # a task of one context, named with another's contextId: refused, nothing answered
        crossed = await rpc.refused("SendMessage", {"message": said(
            "Order 4711", taskId=asked["id"], contextId=other["contextId"])}, INVALID_PARAMS)
        assert "does not match" in crossed
        # the spec's required fields, and a turn's size
        no_id = said("Order 4711", taskId=asked["id"])
        del no_id["messageId"]
        for message in (no_id, said("Order 4711", taskId=asked["id"], role="ROLE_AGENT"),
                        said("Order 4711", taskId=asked["id"], role="ROLE_UNSPECIFIED"),
                        said("x" * 600_000, taskId=asked["id"])):
            await rpc.refused("SendMessage", {"message": message}, INVALID_PARAMS)
        # wrong types: -32602
        for method, params in [("GetTask", {"id": asked["id"], "historyLength": "ten"}),
                               ("GetTask", [asked["id"]]), ("GetTask", "x"),
                               ("SendMessage", {"message": {**said("hi"), "parts": "hi"}}),
                               ("SendMessage", {"message": {**said("hi"), "parts": [{"text": 5}]}})]:
            await rpc.refused(method, params, INVALID_PARAMS)
        # bodies no parser takes: -32700
        for body in (b"[" * 5000 + b"]" * 5000, b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": '
                     b'{"id": "a", "historyLength": ' + b"9" * 5000 + b"}}", b'{"jsonrpc": "2.0", "id": 1, "\xff": 1}',
                     b'{"a":' * 5000 + b"1" + b"}" * 5000):
            answer = await rpc.raw(body)
            assert answer["error"]["code"] == PARSE_ERROR, answer
        # the tasks still wait as they did: nothing above was taken
        for task in (asked, other):
            got = await rpc.call("GetTask", {"id": task["id"]})
            assert got["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        # two answers at once to one approval: one is taken, the other a clean refusal
        approval = await rpc.task(said("Order 4711", taskId=asked["id"]))
        assert approval["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        both = await asyncio.gather(*(rpc.call("SendMessage", {"message": said("yes", taskId=asked["id"])})
                                      for _ in range(2)))
        taken = [a for a in both if "result" in a]
        assert len(taken) >= 1 and all(a["error"]["code"] != -32603 for a in both if "error" in a), both
        assert len(support.REFUNDS) == 1
    tracebacks = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info]
    assert tracebacks == []


@pytest.mark.slow
async def test_a_state_shorter_than_any_poll_is_still_pushed(client: Client, task_queue: str) -> None:
    """An approval answered at once lasts less than any read of the task's state could catch
    (the heartbeats, which older releases polled at, a minute apart here): the notifications
    follow the conversation's history, so it is told, then the completion."""
    support.REFUNDS.clear()
    slow_poll = PushOptions(allow_private=True, retry_seconds=0.01, poll_seconds=60)
    async with running_worker(client, task_queue, [support.build().compile()], ScriptedModel(support.SCRIPT)), \
            receiving() as receiver, \
            running_gateway(client, task_queue, cards=CARDS, a2a_push=slow_poll) as url, \
            httpx.AsyncClient(base_url=url, timeout=60, headers={"Content-Type": "application/json"}) as http:
        rpc = Rpc(http)
        asked = await rpc.task(said(support.QUESTION))
        made = await rpc.call("CreateTaskPushNotificationConfig", {"taskId": asked["id"], "url": receiver.url})
        assert "result" in made, made

        async def first_told() -> bool:  # the question the task asks when the config is set
            return bool(receiver.received)
        await until(first_told, "the question asked when the config was set")
        approval = await rpc.task(said("Order 4711", taskId=asked["id"]))
        assert approval["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        done = await rpc.task(said("yes", taskId=asked["id"]))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"

        async def both_told() -> bool:
            if len(receiver.received) < 3:
                raise NotYet([body["statusUpdate"]["status"]["state"] for _, body in receiver.received])
            return True
        try:
            await until(both_told, "the approval's and the completion's notifications")
        except AssertionError as missing:  # what the push workflow's activities did, to say why
            raise AssertionError(f"{missing}: {await push_activities(client, asked['id'])}") from None
    states = [body["statusUpdate"]["status"]["state"] for _, body in receiver.received]
    assert states == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]
    told = receiver.received[1][1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
    assert "Approve execute_refund(" in told and len(support.REFUNDS) == 1

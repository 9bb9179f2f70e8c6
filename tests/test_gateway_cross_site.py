"""A web page of another origin, in headless Chromium, tries to drive a tokenless gateway on
loopback: an auto-submitted text/plain form that answers a question, a `no-cors` fetch that
starts a thread, and a DNS-rebinding read of the pending questions. Each fails, and the
thread and the list of threads are as they were."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from temporalio.client import Client

from durable_teams.examples import support
from durable_teams.worker.devserver import free_port
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import ConversationInput

from .browser import chromium_or_skip
from .conftest import running_worker
from .gateway_helpers import running_gateway
from .waiting import pending_question

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" enctype="text/plain" action="{gateway}/threads/{thread}/questions/{question}">
<input name='{{"text": "Order 6666", "x": "' value='"}}'></form>
<script>
window.results = {{}};
Promise.allSettled([
  fetch("{gateway}/threads", {{method: "POST", mode: "no-cors",
    body: '{{"team": "support", "thread_id": "{planted}"}}'}}).then(
    () => window.results.nocors = "sent", (e) => window.results.nocors = "failed"),
  fetch("http://rebound.example:{port}/questions").then(r => r.text()).then(
    (t) => window.results.rebind = t, (e) => window.results.rebind = "failed"),
]).then(() => {{
  console.log("results " + JSON.stringify(window.results));  // the page is about to go
  document.getElementById("f").submit();
}});
</script></body></html>"""
"""Both fetches settle before the form goes (a timer raced them on a loaded machine: the form
replaced the page, and its results, first)."""


async def test_a_page_of_another_origin_cannot_drive_the_gateway(client: Client, task_queue: str) -> None:
    chromium = chromium_or_skip()
    from playwright.async_api import async_playwright

    team = support.build().compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support.SCRIPT)), \
            running_gateway(client, task_queue, teams=["support"]) as gateway:
        port = int(gateway.rsplit(":", 1)[1])
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=team.spec, task=support.QUESTION),
            id=f"xs-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        question = await pending_question(handle)
        planted = f"planted-{uuid.uuid4().hex[:8]}"
        page = ATTACK.format(gateway=gateway, thread=handle.id, question=question.question_id,
                             planted=planted, port=port)
        attacker_port = free_port()
        app = Starlette(routes=[Route("/", lambda request: HTMLResponse(page))])
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=attacker_port, log_level="warning"))
        serving = asyncio.ensure_future(server.serve())
        try:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=chromium, headless=True, args=[
                    "--no-sandbox", "--disable-gpu",
                    "--host-resolver-rules=MAP rebound.example 127.0.0.1, MAP attacker.example 127.0.0.1"])
                tab = await browser.new_page()
                form_target = f"{gateway}/threads/{handle.id}/questions/{question.question_id}"
                async with tab.expect_console_message(lambda m: m.text.startswith("results ")) as logged, \
                        tab.expect_navigation(url=form_target):  # the form went out, its answer replaced the page
                    await tab.goto(f"http://attacker.example:{attacker_port}/")
                results = json.loads((await logged.value).text.removeprefix("results "))
                await browser.close()
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, 30)
        still = await handle.query(TeamWorkflow.pending_questions)
        planted_runs = [w async for w in client.list_workflows(f"WorkflowId = '{planted}'")]
    assert [q.question_id for q in still] == [question.question_id]  # not answered by the form
    assert planted_runs == []  # the no-cors fetch started nothing
    assert results["rebind"] == "failed" or "misdirected_request" in results["rebind"]
    assert handle.id not in results["rebind"]

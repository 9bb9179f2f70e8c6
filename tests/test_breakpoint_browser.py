"""A breakpoint in the web inbox in a real browser (headless Chromium, the system's): the
refund's call shown before it runs, its arguments edited on the page, resumed; and a result
shown after a tool ran, stopped from the page."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from temporalio.client import Client

from durable_teams.client.send import send_turn
from durable_teams.teams.builders import Agent, Swarm
from durable_teams.worker.scripted import ScriptedModel

from .browser import chromium_or_skip
from .conftest import running_worker
from .gateway_helpers import running_gateway
from .time_travel_team import REFUNDS, execute_refund, support_model

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


async def test_a_breakpoint_before_the_refund_resumed_with_edited_arguments_from_the_inbox(
        client: Client, task_queue: str) -> None:
    chromium = chromium_or_skip()  # CI (DURABLE_TEAMS_REQUIRE_BROWSER=1) fails instead
    from playwright.async_api import async_playwright, expect

    REFUNDS.clear()
    team = Swarm([Agent("support", "Help customers.", tools=[execute_refund])],
                 interrupt_before=["execute_refund"], interrupt_after=["support"]).compile()
    async with running_worker(client, task_queue, [team], ScriptedModel(support_model)), \
            running_gateway(client, task_queue) as url, async_playwright() as pw:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            thread = (await http.post("/threads", json={"team": team.spec.name})).json()["thread_id"]
        turn = asyncio.ensure_future(send_turn(client, thread, "refund A1"))
        browser = await pw.chromium.launch(executable_path=chromium, headless=True,
                                           args=["--no-sandbox", "--disable-gpu"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 620})
            await page.goto(url)
            card = page.locator(f'[id="q-{thread}-q1"]')
            await expect(card).to_contain_text("Breakpoint before execute_refund", timeout=30_000)
            arguments = card.locator("textarea.arguments")
            await expect(arguments).to_have_value('{\n "order": "A1"\n}')
            await arguments.fill("{not json")
            await card.locator("button.approve").click()
            await expect(page.locator("#status")).to_contain_text("The arguments are not JSON")
            assert REFUNDS == {}  # nothing was sent
            await arguments.fill('{"order": "A2"}')
            await card.locator("button.approve").click()

            after = page.locator(f'[id="q-{thread}-q2"]')  # after the agent's reply, before the turn ends
            await expect(after).to_contain_text("Breakpoint after support", timeout=30_000)
            await expect(after).to_contain_text("refunded A2")
            await expect(after.locator("textarea")).to_have_count(0)  # an agent's reply is not edited
            await after.locator("input.reason").fill("looks wrong")
            await after.locator("button.deny").click()
            reply = await turn
            await expect(page.locator("#questions")).not_to_contain_text(thread, timeout=30_000)
        finally:
            await browser.close()
    assert REFUNDS == {"A2": 1}  # run once, with the arguments edited on the page
    assert (reply.text, reply.status) == (
        "The user stopped the turn at a breakpoint after support: looks wrong.", "cancelled")

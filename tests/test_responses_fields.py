"""Every `responses.create` parameter of the openai client is taken, ignored or refused with a
400 naming it (durable_teams/gateway/doors/responses/fields.py, docs/responses.md's table)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.resources.responses import AsyncResponses
from temporalio.client import Client

from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.doors.responses import fields as fields
from durable_teams.worker.scripted import ScriptedModel

from .conftest import running_worker
from .gateway_helpers import running_gateway
from .teams import DESK, desk_script
from .waiting import until

pytestmark = pytest.mark.workflow

DOCS = Path(__file__).parent.parent / "docs"
CLIENT_ONLY = {"self", "extra_headers", "extra_query", "extra_body", "timeout"}
"""The client's own options, not body fields."""


def test_every_parameter_of_the_openai_client_is_named_and_in_the_docs_table() -> None:
    parameters = set(inspect.signature(AsyncResponses.create).parameters) - CLIENT_ONLY
    named = fields.TAKEN | fields.IGNORED | set(fields.REFUSED)
    assert sorted(parameters - named) == []
    table = (DOCS / "responses.md").read_text().split("## Each field", 1)[1]
    assert [p for p in sorted(named) if f"`{p}`" not in table] == []


@pytest.mark.parametrize(("body", "param"), [
    ({"context_management": [{"type": "compaction", "compact_threshold": 1000}]}, "context_management"),
    ({"moderation": {"model": "omni-moderation-latest"}}, "moderation"),
    ({"access_programs": {"cyber": "standard"}}, "access_programs"),
    ({"background_options": {"completion_window": "2h"}}, "background_options"),  # not in the background
    ({"background_options": {"completion_window": "8h"}, "background": True, "stream": True}, "background_options"),
    ({"background_options": {"completion_window": "1d"}, "background": True}, "background_options"),
    ({"background_options": {"window": "2h"}, "background": True}, "background_options"),
    ({"background_options": "2h"}, "background_options"),
])
def test_what_a_team_cannot_honour_is_a_400_naming_it(body: dict[str, Any], param: str) -> None:
    with pytest.raises(FieldError) as refused:
        fields.check({"model": "desk", "input": "hi", **body})
    assert refused.value.param == param


@pytest.mark.parametrize("body", [
    {"background_options": {"completion_window": "soonest"}},
    {"background_options": {"completion_window": "8h"}, "background": True},
    {"prompt_cache_options": {"mode": "explicit"}}, {"image": {"context_compression": "auto"}},
])
def test_hints_are_taken(body: dict[str, Any]) -> None:
    fields.check({"model": "desk", "input": "hi", **body})


async def test_through_the_openai_client(client: Client, task_queue: str) -> None:
    async with running_worker(client, task_queue, [DESK], ScriptedModel(desk_script)), \
            running_gateway(client, task_queue, teams=["desk"]) as url:
        ai = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        for refused in ({"moderation": {"model": "omni-moderation-latest"}},
                        {"context_management": [{"type": "compaction"}]}, {"access_programs": {"cyber": "standard"}},
                        {"background_options": {"completion_window": "2h"}}):
            with pytest.raises(openai.BadRequestError) as error:
                await ai.responses.create(model="desk", input="hi", **refused)  # type: ignore[call-overload]
            assert error.value.param == next(iter(refused)) and next(iter(refused)) in error.value.message
        later = await ai.responses.create(model="desk", input="hi", background=True,
                                          background_options={"completion_window": "2h"},
                                          prompt_cache_options={"mode": "explicit"})
        assert later.status in ("queued", "in_progress", "completed")

        async def completed() -> bool:
            return (await ai.responses.retrieve(later.id)).status == "completed"
        await until(completed, "the background response completed")
        done = await ai.responses.create(model="desk", input="again", previous_response_id=later.id,
                                         image={"context_compression": "auto"})
        assert "'user:hi'" in done.output_text

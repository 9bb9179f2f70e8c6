"""Your own team on a worker beside the examples, with no model key: each team answered from its
own script (never another team's), a team with no script told how to get one, and each team's
tools its own even when two teams have a tool of one name."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.client.server_state import root_cause
from durable_teams.examples import example_scripts, example_teams, faang
from durable_teams.teams.builders import Agent, Supervisor
from durable_teams.teams.team_tools import ToolsByTeam
from durable_teams.worker.script_files import (
    ScriptError,
    load_script_spec,
    parse_script,
    scripts_for,
)
from durable_teams.worker.scripted import ScriptedModel, call, say, when
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import ToolRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow


def add(a: float, b: float) -> float:
    """Add two numbers (this team's own add: it says so)."""
    return a + b + 1000  # tells this add apart from the FAANG example's


def mine() -> Supervisor:
    """The README's team, as a newcomer writes it: its agent is named like an example's."""
    math = Agent("math_expert", "You are a math expert.", tools=[add])
    return Supervisor([math], instructions="Route to the right expert.", name="my-team")


SCRIPT = {"my-team": {
    "supervisor": [{"call": "transfer_to_math_expert"}, {"say": "Done."}],
    "math_expert": [{"call": "add", "arguments": {"a": 2, "b": 2}},
                    {"when": "1004", "then": "2 + 2 is 1004 here.", "otherwise": "2 + 2 = 4."}],
}}


def test_a_script_file_reads_every_reply_form(tmp_path: Path) -> None:
    path = tmp_path / "myscript.json"
    path.write_text(json.dumps({"t": {"a": [
        "hello", {"say": "hi"}, {"call": "add", "arguments": {"a": 1}},
        {"calls": [{"call": "x"}, {"call": "y", "arguments": {"q": "z"}}], "say": "both"},
        {"when": "denied", "then": {"say": "no"}, "otherwise": {"call": "x"}}]}}))
    steps = list(load_script_spec(str(path))["t"]["a"])
    assert steps[:2] == [say("hello"), say("hi")]
    assert steps[2] == call("add", a=1)
    assert [c.name for c in steps[3].tool_calls] == ["x", "y"] and steps[3].content == "both"  # type: ignore[union-attr]
    assert steps[4] == when("denied", then=say("no"), otherwise=call("x"))


@pytest.mark.parametrize(("data", "says"), [
    ([], "expected an object of teams"),
    ({"t": ["x"]}, "team 't': expected an object of agents"),
    ({"t": {"a": "hi"}}, "team 't', agent 'a': expected a list of replies"),
    ({"t": {"a": [{"shout": "hi"}]}}, "reply 1: unknown reply {'shout': 'hi'}"),
    ({"t": {"a": [{"call": "add", "arguments": [1, 2]}]}}, "'arguments' of 'add' is an object"),
    ({"t": {"a": [{"when": "x", "then": "y"}]}}, "a 'when' reply has a text to look for"),
])
def test_a_script_that_cannot_be_read_says_where(data: object, says: str) -> None:
    with pytest.raises(ScriptError, match=None) as refused:
        parse_script(data, "s.json")
    assert says in str(refused.value)


def test_a_script_of_a_team_not_served_is_refused() -> None:
    with pytest.raises(ScriptError) as refused:
        scripts_for([mine().compile()], parse_script({"my-taem": {"supervisor": ["hi"]}}))
    assert str(refused.value) == "the script names team 'my-taem', which this worker does not serve (teams: my-team)"


async def run_to_end(client: Client, task_queue: str, team: str, task: str) -> str:
    handle = await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team_name=team, task=task),
        id=f"{team}-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
    return (await handle.result()).answer


@pytest.mark.slow  # over a second: out of the quick loop
async def test_each_team_runs_its_own_add_and_answers_from_its_own_script(client: Client, task_queue: str) -> None:
    teams = [*example_teams(), mine().compile()]
    model = ScriptedModel(teams=scripts_for(teams, {**example_scripts(), **parse_script(SCRIPT)}))
    async with running_worker(client, task_queue, teams, model):
        assert await run_to_end(client, task_queue, "my-team", "what is 2+2?") == "Done."
        assert await run_to_end(client, task_queue, "faang", faang.QUESTION) == faang.ANSWER
    tool_results = {(req.team, m["content"]) for req, messages, _ in model.requests
                    for m in messages[-1:] if m["role"] == "tool" and req.agent == "math_expert"}
    assert ("my-team", "1004.0") in tool_results  # this team's add, never the example's
    assert ("faang", "231317.0") in tool_results  # and the example's add for the example
    mine_replies = [m for req, _, _ in model.requests if req.team == "my-team" for m in [req.agent]]
    assert mine_replies == ["supervisor", "math_expert", "math_expert", "supervisor"]


async def test_a_team_with_no_script_is_told_how_to_get_one(client: Client, task_queue: str) -> None:
    """No model key, no script: the conversation ends saying which team and how to script it,
    never with the FAANG example's answer because its supervisor is also named `supervisor`."""
    teams = [*example_teams(), mine().compile()]
    async with running_worker(client, task_queue, teams, ScriptedModel(teams=example_scripts())):
        with pytest.raises(WorkflowFailureError) as failed:
            await run_to_end(client, task_queue, "my-team", "what is 2+2?")
    why = root_cause(failed.value)
    assert "The scripted model has no replies for team 'my-team' (agent 'supervisor')" in why, why
    assert "--script FILE" in why and "OPENAI_BASE_URL" in why and "docs/scripted-models.md" in why


async def test_a_tool_call_recorded_without_its_team_still_finds_its_tool() -> None:
    """A call scheduled before requests named their team (a history in flight across the
    upgrade) runs by name when the name is unique here, and says so when it is not."""
    teams = [*example_teams(), mine().compile()]
    tools = ToolActivities(ToolsByTeam.of(teams))

    async def run(name: str, team: str | None, arguments: str = "{}") -> str:
        req = ToolRequest(tool=name, arguments=arguments, tool_call_id="c", idempotency_key="k",
                          agent="a", team=team)
        return (await ActivityEnvironment().run(tools.run_tool, req)).content

    assert await run("web_search", None, '{"query": "x"}') == faang.web_search("x")
    assert await run("add", "my-team", '{"a": 1, "b": 1}') == "1002.0"
    assert await run("add", "faang", '{"a": 1, "b": 1}') == "2.0"
    assert await run("add", "faang-teams", '{"a": 1, "b": 1}') == "2.0"  # nested teams' tools too
    assert await run("add", "math_team", '{"a": 1, "b": 1}') == "2.0"
    assert await run("add", "my-team/math_expert", '{"a": 1, "b": 1}') == "1002.0"  # an agent run as a child
    ambiguous = await run("add", None, '{"a": 1, "b": 1}')
    assert ambiguous.startswith("Error: tool 'add' is ambiguous on the worker that took this call: 2 teams")
    assert (await run("add", "other-team")).startswith("Error: unknown team 'other-team'")


def test_an_agent_run_as_a_child_answers_from_its_teams_script() -> None:
    from durable_teams.workflows.messages import ModelRequest

    model = ScriptedModel(teams=parse_script(SCRIPT))

    def request(team: str | None) -> ModelRequest:
        return ModelRequest(workflow_id="w", run_id="r", agent="math_expert", model="m",
                            agent_run=0, transcript_length=0, team=team)

    assert model.step_for(request("my-team/math_expert"), [], []) == call("add", a=2, b=2)
    with pytest.raises(ApplicationError, match="no replies for team 'other/math_expert'"):
        model.step_for(request("other/math_expert"), [], [])
    with pytest.raises(ApplicationError) as older:  # a request recorded before requests named their team
        model.step_for(request(None), [], [])
    assert older.value.type == "ScriptExhausted"

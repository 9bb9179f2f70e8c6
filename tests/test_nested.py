"""Teams of teams: nested supervisors and `run_as_child` agents run as child workflows, on a
real Temporal server with the scripted model."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from durable_teams.activities.tool_results import Result
from durable_teams.client.send import send_reply
from durable_teams.client.server_state import pending_questions
from durable_teams.examples import faang, faang_teams
from durable_teams.teams.builders import Agent, CompiledTeam, Supervisor
from durable_teams.worker.scripted import ScriptedModel, call, calls, say
from durable_teams.workflows.children import bounded_history, child_id, child_team
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.definition_checks import TeamError, validate_team
from durable_teams.workflows.labels import TASK, TEAM
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import ConversationInput, ConversationResult, Question

from .conftest import running_worker
from .waiting import until

pytestmark = pytest.mark.workflow

# ---- pure: the spec, the builder, validation ------------------------------------------------


def test_builder_nests_a_supervisor_as_an_agent_and_registers_every_level_s_tools() -> None:
    compiled = faang_teams.build().compile()
    spec = compiled.spec
    assert spec.supervisor is not None and spec.supervisor.agents == ["research_team", "math_team"]
    research = spec.agents["research_team"]
    assert research.description == "A team that researches facts."
    assert research.team is not None and research.team.supervisor is not None
    assert research.team.supervisor.name == "research_team"
    assert list(research.team.agents) == ["research_expert"] and list(research.team.tools) == ["web_search"]
    assert sorted(compiled.tools.names()) == ["add", "multiply", "web_search"]  # one worker serves all
    assert child_team(spec, "math_team") is spec.agents["math_team"].team
    assert child_id("conv-1", "math_team", 3) == "conv-1/math_team-3"


def test_run_as_child_agent_becomes_a_one_agent_team_with_its_own_tools() -> None:
    team = faang.build()
    team.agents = [team.agents[0], Agent("math_expert", "Math.", tools=[faang.add], run_as_child=True)]
    spec = team.compile().spec
    alone = child_team(spec, "math_expert")
    assert alone.supervisor is None and alone.start_agent == "math_expert"
    assert list(alone.agents) == ["math_expert"] and not alone.agents["math_expert"].run_as_child
    assert list(alone.tools) == ["add"] and alone.budgets == spec.budgets
    validate_team(alone)


def test_bounded_history_keeps_the_newest_messages_and_never_opens_on_a_tool_message() -> None:
    messages = [Message(role="user", content="x" * 1000),
                Message(role="assistant", content="", tool_calls=[]),
                Message(role="tool", content="y" * 1000, tool_call_id="c1"),
                Message(role="assistant", content="answer"),
                Message(role="tool", content="Successfully transferred", tool_call_id="c2")]
    assert bounded_history(messages) == messages
    kept = bounded_history(messages, max_bytes=1200)
    assert [m.content for m in kept] == ["answer", "Successfully transferred"]
    assert bounded_history(messages, max_bytes=1)[-1] == messages[-1]


@pytest.mark.parametrize(("build", "problem"), [
    (lambda: Supervisor([Supervisor([Agent("a")]), Supervisor([Agent("b")])], name="top"),
     "team 'top' has two agents named 'team'"),
    (lambda: Supervisor([Supervisor([Agent("a")], name="inner"), Agent("supervisor")]),
     "supervisor name 'supervisor' is also an agent's name"),
    (lambda: Supervisor([Supervisor([Agent("a")], name="team_a"), Agent("a")], name="top"),
     "the name 'a' is used by two agents"),
    (lambda: Supervisor([Supervisor([Agent("a", tools=["nope"])], name="inner")], name="top"),
     "unknown built-in tool 'nope'"),
])
def test_bad_nesting_is_refused_when_compiled(build, problem: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=problem):
        build().compile()


def test_a_team_inside_itself_and_children_in_a_swarm_are_refused() -> None:
    loop = Supervisor([Agent("a")], name="loop")
    loop.agents = [*loop.agents, loop]
    with pytest.raises(TeamError, match="'loop' is placed inside its own team"):
        loop.compile()
    spec = faang.build().compile().spec
    swarm = replace(spec, **{"supervisor": None, "start_agent": "math_expert", "agents": {
        "math_expert": replace(spec.agents["math_expert"], run_as_child=True)}})
    with pytest.raises(TeamError, match="only a supervisor's agents can"):
        validate_team(swarm)
    nested = faang_teams.build().compile().spec
    inner = nested.agents["math_team"]
    bad = replace(nested, **{"agents": {**nested.agents, "math_team": replace(
        inner, tools=["add"])}})
    with pytest.raises(TeamError, match="'math_team' is a nested team: give tools to its agents"):
        validate_team(bad)
    broken = replace(inner.team, **{"supervisor": replace(
        inner.team.supervisor, agents=["ghost"])})  # type: ignore[arg-type]
    with pytest.raises(TeamError, match="in nested team 'math_team': supervisor names unknown agent 'ghost'"):
        validate_team(replace(nested, **{"agents": {
            **nested.agents, "math_team": replace(inner, team=broken)}}))


# ---- on a real server -----------------------------------------------------------------------


def events(history, kind: EventType) -> list:  # noqa: ANN001
    return [e for e in history.events if e.event_type == kind]


async def start(client: Client, task_queue: str, compiled: CompiledTeam, task: str) -> WorkflowHandle:
    return await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team=compiled.spec, task=task),
        id=f"nested-{uuid.uuid4().hex[:8]}", task_queue=task_queue)


@pytest.mark.slow  # over a second: out of the quick loop
async def test_two_level_team_answers_faang_through_child_workflows(client: Client, task_queue: str) -> None:
    compiled = faang_teams.build().compile()
    model = ScriptedModel(faang_teams.SCRIPT)
    async with running_worker(client, task_queue, [compiled], model):
        handle = await start(client, task_queue, compiled, faang.QUESTION)
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, False, result_type=list[Message])
        history = await handle.fetch_history()
        ids = [f"{handle.id}/research_team-1", f"{handle.id}/math_team-2"]
        children = [client.get_workflow_handle(i, result_type=ConversationResult) for i in ids]
        child_results = [await c.result() for c in children]
        child_views = [await c.query(TeamWorkflow.transcript, True, result_type=list[Message]) for c in children]
        labels = [(await h.describe()).typed_search_attributes for h in (handle, *children)]
    assert result.answer == faang.ANSWER and result.status == "completed"
    # started without search attributes: each workflow labelled itself (the Web UI's columns)
    assert [(a.get(TEAM), a.get(TASK)) for a in labels] == [
        ("faang-teams", None), ("research_team", None), ("math_team", None)]
    assert result.model_calls == 3 + (2 + 2) + (2 + 5)  # the children's calls count too
    # the parent's history: each nested team started and completed as a child, with its id
    started = events(history, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)
    assert [e.start_child_workflow_execution_initiated_event_attributes.workflow_id for e in started] == ids
    assert [e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
            for e in started] == ["TeamWorkflow", "TeamWorkflow"]
    assert [e.user_metadata.summary.data.decode() for e in started] == [
        '"nested team: research_team"', '"nested team: math_team"']
    completed = events(history, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED)
    assert [e.child_workflow_execution_completed_event_attributes.workflow_execution.workflow_id
            for e in completed] == ids
    # no model call or tool of the nested teams ran in the parent
    scheduled = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    assert [e.activity_task_scheduled_event_attributes.activity_type.name for e in scheduled] == [
        "available_labels", *["call_model"] * 3]  # labels: a raw start asks which exist
    # each child answered its part, in its own history
    assert [r.answer for r in child_results] == [faang_teams.RESEARCH_SUMMARY, faang.ANSWER]
    assert [m.content for m in child_views[1] if m.role == "tool" and m.name == "add"] == [
        "231317.0", "1782317.0", "1796317.0", "1977586.0"]
    # the math team saw the user's request, the research team's answer and its own handoff
    opening = [(m.role, m.name, m.content) for m in child_views[1][:4]]
    assert opening == [
        ("user", None, faang.QUESTION),
        ("assistant", "research_team", faang_teams.RESEARCH_SUMMARY),
        ("assistant", "top_supervisor", ""),
        ("tool", "transfer_to_math_team", "Successfully transferred to math_team"),
    ]
    math_expert_view = next(msgs for r, msgs, _ in model.requests if r.agent == "math_expert")
    assert "transfer_to_math_team" not in str(math_expert_view)  # the parent's handoff is stripped
    # and the parent's shared conversation reads like any supervisor's
    assert [(m.name, m.content) for m in transcript if m.role == "assistant" and m.content] == [
        ("research_team", faang_teams.RESEARCH_SUMMARY),
        ("research_team", "Transferring back to top_supervisor"),
        ("math_team", faang.ANSWER),
        ("math_team", "Transferring back to top_supervisor"),
        ("top_supervisor", faang.ANSWER),
    ]


ASKING = {**faang_teams.SCRIPT, "research_team": [
    call("ask_human", question="Which year?", suggestions=["2024"]),
    call("transfer_to_research_expert"),
    say(faang_teams.RESEARCH_SUMMARY),
]}


def asking_team() -> CompiledTeam:
    team = faang_teams.build()
    research_team = team.agents[0]
    assert isinstance(research_team, Supervisor)
    research_team.tools = ["ask_human"]  # the nested team's lead may ask the person
    return team.compile()


@pytest.mark.slow  # over a second: out of the quick loop
async def test_ask_human_inside_a_nested_team_is_listed_and_answered_by_child_id(
    client: Client, task_queue: str
) -> None:
    compiled = asking_team()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(ASKING)):
        handle = await start(client, task_queue, compiled, faang.QUESTION)
        cid = f"{handle.id}/research_team-1"
        listed = await _listed(client, cid)  # the listing behind `durable-teams pending`
        assert listed.text == "Which year?" and listed.agent == "research_team"
        status: ConversationStatus = await handle.query(TeamWorkflow.status)
        assert status.children == [cid]
        assert await send_reply(client, cid, None, text="2024") == listed.question_id
        result = await handle.result()
        child_view = await client.get_workflow_handle(cid).query(
            TeamWorkflow.transcript, True, result_type=list[Message])
    assert result.answer == faang.ANSWER
    assert ("tool", "ask_human", "2024") in [(m.role, m.name, m.content) for m in child_view]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_nested_team_waiting_for_a_person_continues_as_new_under_its_parent(
    client: Client, task_queue: str
) -> None:
    compiled = asking_team()
    sub = compiled.spec.agents["research_team"].team
    assert sub is not None
    # passed by the time it asks; not by the new run, which re-attaches to the question without
    # asking the namespace's labels again (ConversationState.labels; asking made every new run
    # continue as new again, in a loop)
    sub.continue_as_new_after_events = 8
    async with running_worker(client, task_queue, [compiled], ScriptedModel(ASKING)):
        handle = await start(client, task_queue, compiled, faang.QUESTION)
        cid = f"{handle.id}/research_team-1"
        listed = await _listed(client, cid)
        await send_reply(client, cid, listed.question_id, text="2024")
        result = await handle.result()
        child = await client.get_workflow_handle(cid, result_type=ConversationResult).result()
    assert result.answer == faang.ANSWER
    assert child.runs >= 2 and child.answer == faang_teams.RESEARCH_SUMMARY


async def _listed(client: Client, workflow_id: str):  # noqa: ANN202
    """Poll the cross-conversation listing (a visibility query: no event to wait on)."""
    async def listed() -> list[Question]:
        return [question for wid, question in await pending_questions(client) if wid == workflow_id]
    return (await until(listed, f"a question from {workflow_id} listed"))[0]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_run_as_child_agent_runs_in_its_own_workflow(client: Client, task_queue: str) -> None:
    team = faang.build()
    math = team.agents[1]
    assert isinstance(math, Agent)
    math.run_as_child = True
    compiled = team.compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(faang.SCRIPT)):
        handle = await start(client, task_queue, compiled, faang.QUESTION)
        result = await handle.result()
        history = await handle.fetch_history()
        child = await client.get_workflow_handle(
            f"{handle.id}/math_expert-2", result_type=ConversationResult).result()
    assert result.answer == child.answer == faang.ANSWER
    started = events(history, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)
    assert [e.user_metadata.summary.data.decode() for e in started] == ['"agent: math_expert"']
    names = [e.activity_task_scheduled_event_attributes.activity_type.name
             for e in events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)]
    assert names == ["available_labels", "call_model", "call_model", "run_tool", "call_model", "call_model",
                     "call_model"]


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_failed_child_is_an_error_the_supervisor_reads(client: Client, task_queue: str) -> None:
    script = {**faang_teams.SCRIPT, "math_team": []}  # its model fails: the child fails
    compiled = faang_teams.build().compile()
    async with running_worker(client, task_queue, [compiled], ScriptedModel(script)):
        handle = await start(client, task_queue, compiled, faang.QUESTION)
        result = await handle.result()
        transcript = await handle.query(TeamWorkflow.transcript, False, result_type=list[Message])
    assert result.answer == faang.ANSWER  # the scripted supervisor answers anyway
    failure = next(m for m in transcript if m.name == "math_team" and m.kind == "error")
    assert (failure.content or "").startswith("math_team could not finish: The model call for math_team failed")


@pytest.mark.slow  # over a second: out of the quick loop
async def test_parallel_handoffs_run_two_nested_teams_at_once(client: Client, task_queue: str) -> None:
    team = faang_teams.build()
    team.parallel_tool_calls = True
    compiled = team.compile()
    script = {**faang_teams.SCRIPT, "top_supervisor": [
        calls(("transfer_to_research_team", {}), ("transfer_to_math_team", {})), say("both done")]}
    async with running_worker(client, task_queue, [compiled], ScriptedModel(script)):
        handle = await start(client, task_queue, compiled, faang.QUESTION)
        result = await handle.result()
        history = await handle.fetch_history()
    assert result.answer == "both done"
    kinds = [e.event_type for e in history.events if "CHILD" in EventType.Name(e.event_type)]
    initiated = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    # both children were started before either completed
    assert kinds[:2] == [initiated, initiated]


async def test_mention_addresses_a_nested_team_directly(client: Client, task_queue: str) -> None:
    compiled = faang_teams.build().compile()
    script = {**faang_teams.SCRIPT, "math_team": [say("Ask me a sum.")]}
    async with running_worker(client, task_queue, [compiled], ScriptedModel(script)):
        handle = await start(client, task_queue, compiled, "@math_team hello")
        result = await handle.result()
        child = await client.get_workflow_handle(f"{handle.id}/math_team-1").query(
            TeamWorkflow.transcript, True, result_type=list[Message])
    assert (result.agent, result.answer) == ("math_team", "Ask me a sum.")
    assert [(m.role, m.content) for m in child] == [("user", "hello"), ("assistant", "Ask me a sum.")]


def remember_order(order: str, context_variables: dict) -> Result:
    """Note the customer's order number."""
    return Result(value=f"noted {order}", context_variables={"order": order})


async def test_context_a_child_learns_flows_back_to_the_parent(client: Client, task_queue: str) -> None:
    clerk = Agent("clerk", "Take notes.", tools=[remember_order], run_as_child=True)
    compiled = Supervisor([clerk], supervisor_name="boss", name="notes").compile()
    script = {"boss": [call("transfer_to_clerk"), say("noted")],
              "clerk": [call("remember_order", order="A-17"), say("noted A-17")]}
    async with running_worker(client, task_queue, [compiled], ScriptedModel(script)):
        handle = await start(client, task_queue, compiled, "order A-17 please")
        result = await handle.result()
    assert result.context == {"order": "A-17"}  # learned in the child, kept by the parent

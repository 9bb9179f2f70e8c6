"""Team definitions fail where they are defined: `Agent(...)`, `Supervisor(...)`, `Swarm(...)`,
`@tool` raise a `TeamError` naming the problem, before any conversation. Pure and fast."""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.tool_activities import ToolActivities
from durable_teams.activities.wire import message_dict
from durable_teams.examples import acme, faang, faang_teams, support
from durable_teams.teams import TeamError
from durable_teams.teams.builders import Agent, Supervisor, Swarm
from durable_teams.teams.tools import ToolRegistry, tool
from durable_teams.worker.scripted import ScriptedModel
from durable_teams.workflows.builtins import BUILTINS
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import AgentSpec, Budgets, Message, TeamSpec, ToolRequest
from durable_teams.workflows.state import ConversationInput

from .conftest import running_worker

pytestmark = pytest.mark.workflow

NAMES = "1-64 characters: letters, digits, '_' and '-'"
LONG = "a" * 60


def lookup(q: str) -> str:
    """Looks something up."""
    return q


def other_lookup(q: str) -> str:
    """Another function."""
    return q


def named(name: str) -> Callable[..., Any]:
    def fn(q: str) -> str:
        """A tool."""
        return q

    fn.__name__ = name
    return fn


def star_args(*items: str) -> str:
    """Takes *args."""
    return ""


def star_kwargs(q: str, **options: str) -> str:
    """Takes **kwargs."""
    return ""


CASES: list[tuple[str, Callable[[], object], str]] = [
    # names an endpoint refuses
    ("agent name with a dot", lambda: Agent("agent.v2"),
     f"agent name 'agent.v2' cannot be sent to a model: its message name would be 'agent.v2', "
     f"and names must be {NAMES} (spaces become '_')"),
    ("agent name of 65 characters", lambda: Agent("b" * 65),
     f"agent name '{'b' * 65}' cannot be sent to a model: its message name would be "
     f"'{'b' * 65}', and names must be {NAMES} (spaces become '_')"),
    ("blank agent name", lambda: Agent("  "), "an agent needs a non-empty name"),
    ("agent name not a string", lambda: Agent(7),  # type: ignore[arg-type]
     "an agent's name must be a string, got 7"),
    ("handoff tool over 64 characters", lambda: Supervisor([Agent(LONG)]),
     f"the handoff tool to '{LONG}' would be named 'transfer_to_{LONG}' (72 characters), which "
     f"endpoints refuse ({NAMES}): use a shorter agent name or handoff prefix"),
    ("handoff prefix too long", lambda: Supervisor([Agent("a")], handoff_tool_prefix="p" * 63),
     f"the handoff tool to 'a' would be named '{'p' * 63}_a' (65 characters), which endpoints "
     f"refuse ({NAMES}): use a shorter agent name or handoff prefix"),
    ("tool name with a space", lambda: tool(lookup, name="look up"),
     f"tool name 'look up' is not accepted by OpenAI-compatible endpoints ({NAMES})"),
    ("tool name of 65 characters", lambda: Agent("a", tools=[named("t" * 65)]),
     f"tool name '{'t' * 65}' is not accepted by OpenAI-compatible endpoints ({NAMES})"),
    # duplicates and empty teams
    ("swarm with two agents of one name", lambda: Swarm([Agent("a"), Agent("a")]),
     "swarm 'swarm' has two agents named 'a'"),
    ("supervisor with two agents of one name", lambda: Supervisor([Agent("a"), Agent("a")]),
     "team 'team' has two agents named 'a'"),
    ("one name in two nested teams",
     lambda: Supervisor([Supervisor([Agent("a")], name="inner"), Agent("a")], name="top"),
     "the name 'a' is used by two agents of the team tree"),
    ("empty supervisor", lambda: Supervisor([]), "team 'team' has no agents"),
    ("empty swarm", lambda: Swarm([]), "swarm 'swarm' has no agents"),
    ("two functions under one tool name",
     lambda: Swarm([Agent("a", tools=[tool(lookup)]), Agent("b", tools=[tool(other_lookup, name="lookup")])]),
     "two different functions are registered as tool 'lookup'"),
    # collisions and shadowing
    ("handoff tools collide", lambda: Supervisor([Agent("Math Expert"), Agent("math_expert")]),
     "agents 'Math Expert' and 'math_expert' would both get the handoff tool "
     "'transfer_to_math_expert' of 'supervisor': rename one; agents 'Math Expert' and "
     "'math_expert' both become 'math_expert' in handoff tools and routing: rename one"),
    ("swarm peers collide",
     lambda: Swarm([Agent("a", handoffs=["B c", "b_c"]), Agent("B c"), Agent("b_c")]),
     "agents 'B c' and 'b_c' would both get the handoff tool 'transfer_to_b_c' of 'a': rename "
     "one; agents 'B c' and 'b_c' both become 'b_c' in handoff tools and routing: rename one"),
    ("supervisor tool shadows a handoff",
     lambda: Supervisor([Agent("math")], tools=[named("transfer_to_math")]),
     "'supervisor' has a tool named 'transfer_to_math', which shadows its handoff to 'math'"),
    ("swarm tool shadows a handoff",
     lambda: Swarm([Agent("a", tools=[named("transfer_to_b")], handoffs=["b"]), Agent("b")]),
     "'a' has a tool named 'transfer_to_b', which shadows its handoff to 'b'"),
    *[(f"tool shadows built-in {b}", functools.partial(lambda b: Swarm([Agent("a", tools=[named(b)])]), b),
       f"tool '{b}' shadows the built-in tool of that name: rename it, or name the built-in as "
       f"the string '{b}'") for b in sorted(BUILTINS)],
    ("unknown built-in", lambda: Agent("a", tools=["ask_humans"]).spec(ToolRegistry()),
     f"unknown built-in tool 'ask_humans'; built-ins: {sorted(BUILTINS)}"),
    # tools without a name or with signatures a schema cannot express
    ("lambda tool", lambda: Agent("a", tools=[lambda q: q]),
     "a tool needs a name: a lambda has none; use def, or tool(fn, name=...)"),
    ("partial tool", lambda: Agent("a", tools=[functools.partial(lookup, "x")]),
     "a tool needs a name: partial object without a __name__ has none; use def, or tool(fn, name=...)"),
    ("not callable", lambda: Agent("a", tools=[42]),  # type: ignore[list-item]
     "agent 'a' is given 42 as a tool: pass a function, a @tool or the name of a built-in tool"),
    ("*args", lambda: Agent("a", tools=[star_args]),
     "tool 'star_args': parameter *items cannot be described to a model; give every parameter a "
     "name (and a type)"),
    ("**kwargs", lambda: tool(star_kwargs),
     "tool 'star_kwargs': parameter **options cannot be described to a model; give every "
     "parameter a name (and a type)"),
    # numeric options
    ("timeout 0", lambda: tool(lookup, timeout_seconds=0),
     "tool 'lookup': timeout_seconds must be a number > 0, got 0"),
    ("timeout negative", lambda: tool(lookup, timeout_seconds=-1.5),
     "tool 'lookup': timeout_seconds must be a number > 0, got -1.5"),
    ("timeout NaN", lambda: tool(lookup, timeout_seconds=math.nan),
     "tool 'lookup': timeout_seconds must be a number > 0, got nan"),
    ("timeout infinite", lambda: tool(lookup, timeout_seconds=math.inf),
     "tool 'lookup': timeout_seconds must be a number > 0, got inf"),
    ("retry interval 0", lambda: tool(lookup, idempotent=True, retry_interval_seconds=0),
     "tool 'lookup': retry_interval_seconds must be a number > 0, got 0"),
    ("max_attempts 0", lambda: tool(lookup, idempotent=True, max_attempts=0),
     "tool 'lookup': max_attempts must be an integer >= 1, got 0"),
    ("retries without idempotent", lambda: tool(lookup, max_attempts=3),
     "tool 'lookup' may not be retried (max_attempts=3): a retry after a timeout could repeat its "
     "side effect. Pass idempotent=True if running it twice is harmless (a read, or a write "
     "deduplicated with its idempotency key)"),
    ("approval tool with retries", lambda: tool(lookup, needs_approval=True, max_attempts=2),
     "tool 'lookup' needs approval and may not be retried (max_attempts=2): a retry after a "
     "timeout could repeat its side effect. Pass idempotent=True if running it twice is harmless "
     "(a read, or a write deduplicated with its idempotency key)"),
    ("empty task queue", lambda: tool(lookup, task_queue=" "),
     "tool 'lookup': task_queue must be a non-empty string, got ' '"),
    ("max_model_calls 0", lambda: Swarm([Agent("a")], budgets=Budgets(max_model_calls=0)),
     "budgets: max_model_calls must be an integer >= 1, got 0"),
    ("ask_human timeout 0", lambda: Supervisor([Agent("a")], ask_human_timeout_seconds=0),
     "team 'team': ask_human_timeout_seconds must be a number > 0, got 0.0"),
    ("max_parallel_handoffs 0", lambda: Supervisor([Agent("a")], max_parallel_handoffs=0),
     "team 'team': max_parallel_handoffs must be an integer >= 1, got 0"),
    ("decision_max_retries -1", lambda: Supervisor([Agent("a")], decision_max_retries=-1),
     "team 'team': decision_max_retries must be an integer >= 0, got -1"),
    ("temperature 3", lambda: Agent("a", temperature=3),
     "agent 'a': temperature must be between 0 and 2, got 3"),
]


@pytest.mark.parametrize(("build", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_definition_fails_where_it_is_defined(build: Callable[[], object], message: str) -> None:
    with pytest.raises(TeamError) as caught:
        build()  # construction alone, no compile(), no conversation
    assert str(caught.value) == message


def test_good_definitions_stay_valid() -> None:
    display = Agent("Research Expert", tools=[tool(lambda q: q, name="echo")])
    team = Supervisor([display, Agent("b" * 52)]).compile()  # transfer_to_ + 52 = 64 characters
    assert "transfer_to_" + "b" * 52 in {f"transfer_to_{n}" for n in team.spec.supervisor.agents}  # type: ignore[union-attr]
    for example in (faang.build(), acme.build(), support.build(), faang_teams.build()):
        assert example.compile().spec.agents


def test_a_display_name_is_sent_with_underscores() -> None:
    message = Message(role="assistant", content="hi", name="Research Expert")
    assert message_dict(message)["name"] == "Research_Expert"


def test_approval_and_plain_tools_run_at_most_once_by_default() -> None:
    assert tool(lookup, needs_approval=True).spec.max_attempts == 1
    assert tool(lookup).spec.max_attempts == 1
    assert tool(lookup, idempotent=True).spec.max_attempts == 3
    assert tool(lookup, idempotent=True, max_attempts=5).spec.max_attempts == 5


async def test_positional_only_parameters_work() -> None:
    def scale(x: float, /, factor: float = 2.0) -> float:
        """Scales x."""
        return x * factor

    req = ToolRequest(tool="scale", arguments='{"x": 1.5}', tool_call_id="c", idempotency_key="k",
                      agent="a")
    result = await ActivityEnvironment().run(ToolActivities(ToolRegistry(scale)).run_tool, req)
    assert result.content == "3.0" and not result.is_error


async def test_a_raw_team_spec_with_a_bad_name_fails_the_conversation_at_once(
    client: Client, task_queue: str
) -> None:
    good = Swarm([Agent("a")]).compile()
    bad = TeamSpec(agents={"a b.c": AgentSpec(name="a b.c")}, start_agent="a b.c")
    async with running_worker(client, task_queue, [good], ScriptedModel({})):
        handle = await client.start_workflow(
            TeamWorkflow.run, ConversationInput(team=bad, task="go"),
            id=f"bad-team-{uuid.uuid4().hex[:8]}", task_queue=task_queue)
        with pytest.raises(WorkflowFailureError) as caught:
            await handle.result()
    assert caught.value.cause.message == (  # type: ignore[attr-defined]
        f"Invalid team: agent name 'a b.c' cannot be sent to a model: its message name would be "
        f"'a_b.c', and names must be {NAMES} (spaces become '_')")


class Socket:
    """Not a pydantic type, not JSON."""


def test_a_parameter_type_without_a_schema_is_refused_at_definition() -> None:
    def send(sock: Socket) -> str:
        """Sends."""
        return ""

    with pytest.raises(TeamError) as caught:
        Agent("a", tools=[send])
    assert str(caught.value).startswith(
        "tool 'send': its parameters cannot be described as a JSON schema (PydanticSchemaGenerationError: ")

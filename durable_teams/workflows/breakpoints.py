"""Breakpoints: pause before or after a step for a person (docs/time-travel.md, "Breakpoints").

A step is a tool call (an activity; not a handoff or a built-in) or an agent's run (from when
the conversation is handed to it until its reply). Where a step pauses is declared on the team
(`interrupt_before=["tools" | tool | agent]`), on an agent (its own tools, "tools", itself as
"agent" or its name) or on a tool (`@tool(interrupt_before=True)`); `pauses` is the one place
that reads them. A pause is an approval (`Question.breakpoint`) a person answers: resume
(approve), resume with edits (a tool's arguments before it runs, its result after), or stop
(deny), and the model or the transcript is told which.

Only teams that declare breakpoints reach these waits, so other conversations, and the
histories recorded before breakpoints existed, run exactly as before. The waits after a tool
and around an agent are not cut by continue-as-new (the step's outcome is not in state yet);
the one before a tool is, and re-attaches to its question by the call's id.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from .human import HumanDesk, describe_duration
    from .messages import Message, TeamSpec, ToolCall, ToolResult
    from .state import TurnReply, UserTurn
    from .transcript import Transcript

When = Literal["before", "after"]

AGENT = "agent"
"""In an agent's own lists: the agent itself (LangGraph's node name for the model call)."""
TOOLS = "tools"
"""In a team's or an agent's lists: every tool (LangGraph's node name for the tool node)."""


def pauses(team: TeamSpec, when: When, agent: str, tool: str | None = None) -> bool:
    """Whether the step pauses: the run of `agent` (`tool` None) or its call of `tool`."""
    declared = team.interrupt_before if when == "before" else team.interrupt_after
    spec = team.agents.get(agent)  # a supervisor is named in the team's lists only
    own: list[str] = [] if spec is None else (
        spec.interrupt_before if when == "before" else spec.interrupt_after)
    if tool is None:
        return agent in declared or agent in own or AGENT in own
    tool_spec = team.tools.get(tool)
    flagged = tool_spec is not None and (
        tool_spec.interrupt_before if when == "before" else tool_spec.interrupt_after)
    return flagged or any(tool in names or TOOLS in names for names in (declared, own))


def declared(team: TeamSpec) -> bool:
    """Whether the team (nested teams aside) declares any breakpoint: only then do agent runs
    look for one."""
    return bool(team.interrupt_before or team.interrupt_after
                or any(a.interrupt_before or a.interrupt_after for a in team.agents.values())
                or any(t.interrupt_before or t.interrupt_after for t in team.tools.values()))


EVERY = "*"
"""In a turn's lists (a LangGraph run's `interrupt_before=["*"]`): every agent."""


def turn_problem(team: TeamSpec, names: list[str]) -> str | None:
    """Why a turn's breakpoint names (agents, or "*") would never pause, or None."""
    agents = _agent_names(team)
    unknown = [name for name in names if name != EVERY and name not in agents]
    if not unknown:
        return None
    return (f"no agent {', '.join(map(repr, unknown))} in team {team.name} to pause at "
            f"(its agents: {', '.join(agents)}; or \"{EVERY}\")")


def for_turn(team: TeamSpec, before: list[str] | None, after: list[str] | None) -> tuple[TeamSpec, str | None]:
    """The team as one turn runs it: its breakpoints and the turn's own (agent names, "*"); or
    the team as it is and why the turn's would never pause."""
    problem = turn_problem(team, [*(before or []), *(after or [])])
    if problem is not None:
        return team, problem
    agents = _agent_names(team)

    def named(names: list[str] | None) -> list[str]:
        return [a for a in agents if a in (names or []) or EVERY in (names or [])]
    return replace(team, interrupt_before=[*team.interrupt_before, *named(before)],
                   interrupt_after=[*team.interrupt_after, *named(after)]), None


def turn_team(team: TeamSpec, number: int, turn: UserTurn, transcript: Transcript) -> tuple[TeamSpec, TurnReply | None]:
    """The team as turn `number` runs it, with the turn's own breakpoints; or the reply refusing
    names no agent of it has (a turn sent before the team was known: refused here, never
    ignored). No patch: only a turn sent with breakpoints (`UserTurn` fields no recorded history
    holds) takes this path, so every recorded history replays with the commands it issued
    (docs/deployment.md, "Upgrading workers": fields with defaults need no patch)."""
    if not (turn.interrupt_before or turn.interrupt_after):
        return team, None
    turned, problem = for_turn(team, turn.interrupt_before, turn.interrupt_after)
    if problem is None:
        return turned, None
    agent = team.supervisor.name if team.supervisor else "team"
    transcript.append(Message(role="assistant", content=problem, name=agent, kind="error"))
    return team, TurnReply(turn=number, text=problem, agent=agent, status="failed")


def _agent_names(team: TeamSpec) -> list[str]:
    return ([team.supervisor.name] if team.supervisor else []) + list(team.agents)


def _reason(text: str) -> str:
    return f": {text}" if text.strip() else ""


class Breakpoints:
    """The pauses of one team's steps, asked through the conversation's `HumanDesk`."""

    def __init__(self, team: TeamSpec, desk: HumanDesk):
        self.team = team
        self.desk = desk
        self.on = declared(team)

    async def before_tool(self, agent: str, call: ToolCall) -> tuple[str | None, str]:
        """Before a tool call runs. Returns the arguments to run it with (None: stopped) and a
        note for the model (empty: resumed as it was)."""
        question = self.desk.new_question(
            kind="approval", breakpoint=True, agent=agent, tool=call.name, arguments=call.arguments,
            text=f"Breakpoint before {call.name}({call.arguments}): resume (approve, optionally "
                 "with edited arguments) or stop (deny)?",
            tool_call_id=call.id,
        )
        reply = await self.desk.wait(question)
        if reply is None:
            waited = describe_duration(question.timeout_seconds)
            return None, f"Not run: {call.name} waited at a breakpoint and no one resumed it within {waited}."
        if not reply.approved:
            return None, f"The user stopped {call.name} at a breakpoint{_reason(reply.text)}. It was not run."
        if reply.arguments is not None and reply.arguments != call.arguments:
            return reply.arguments, f"(The user changed the arguments to {reply.arguments} before it ran.) "
        return call.arguments, ""

    async def after_tool(self, agent: str, call: ToolCall, result: ToolResult) -> tuple[ToolResult, str | None]:
        """After a tool ran, before the model sees its result. Returns the result the model
        sees (a person may have edited it) and, when the person stopped the run, why."""
        shown = result.content
        question = self.desk.new_question(
            kind="approval", breakpoint=True, after=True, agent=agent, tool=call.name,
            arguments=call.arguments, result=shown, tool_call_id=call.id,
            text=f"Breakpoint after {call.name}({call.arguments}) returned: {shown[:500]}\n"
                 "Resume (approve, optionally with an edited result) or stop (deny)?",
        )
        reply = await self.desk.wait(question, interruptible=False)
        if reply is None:  # no one came: the run goes on with the result as it was
            return result, None
        if not reply.approved:
            note = f"The user stopped {agent} at a breakpoint after {call.name} ran{_reason(reply.text)}."
            return result.model_copy(update={"content": f"{result.content}\n\n({note})"}), note
        if reply.result is not None:
            return result.model_copy(update={"content": reply.result, "is_error": False}), None
        return result, None

    async def before_agent(self, agent: str) -> str | None:
        """Before `agent` runs (when the conversation is handed to it). Returns None to run it,
        else the note that it was stopped."""
        question = self.desk.new_question(
            kind="approval", breakpoint=True, agent=agent,
            text=f"Breakpoint before {agent} runs: resume (approve) or stop (deny)?",
        )
        reply = await self.desk.wait(question, interruptible=False)
        if reply is None:
            waited = describe_duration(question.timeout_seconds)
            return f"Not run: {agent} waited at a breakpoint and no one resumed it within {waited}."
        if not reply.approved:
            return f"The user stopped {agent} at a breakpoint before it ran{_reason(reply.text)}."
        return None

    async def after_agent(self, agent: str, what: str) -> str | None:
        """After `agent`'s reply (`what` says what it answered or whom it hands off to), before
        routing goes on. Returns None to go on, else the note that the person stopped the turn."""
        question = self.desk.new_question(
            kind="approval", breakpoint=True, after=True, agent=agent, result=what,
            text=f"Breakpoint after {agent}: {what[:500]}\nResume (approve) or stop (deny)?",
        )
        reply = await self.desk.wait(question, interruptible=False)
        if reply is None or reply.approved:
            return None
        return f"The user stopped the turn at a breakpoint after {agent}{_reason(reply.text)}."


"""A LangGraph run request read strictly: what it asks (a turn's text, or the answer to an
interrupt), how it streams, and a `Unsupported` (501) or `BadRequest` (400) naming whatever it
asks that this door does not do. Pure: no Temporal calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from durable_teams.client.approvals import approval_of, ask_again
from durable_teams.gateway.core.requests import BadRequest, encodable
from durable_teams.gateway.doors.langgraph.langgraph_multitask import STRATEGIES
from durable_teams.gateway.doors.langgraph.langgraph_wire import STREAM_MODES, Unsupported
from durable_teams.workflows.intake import MAX_METADATA_BYTES as MAX_RUN_METADATA_BYTES
from durable_teams.workflows.intake import MAX_TURN_BYTES
from durable_teams.workflows.state import Question

ACCEPTED = {"assistant_id", "input", "command", "stream_mode", "if_not_exists", "multitask_strategy",
            "on_disconnect", "durability", "checkpoint_during", "strict_resume", "stream_subgraphs",
            "stream_resumable", "config", "metadata", "on_completion", "context", "feedback_keys", "webhook",
            "interrupt_before", "interrupt_after"}
"""Fields a run request may carry (each checked below); any other is refused by name."""


@dataclass
class RunRequest:
    """What a run asks: `text` (a new turn) or `resume` (the answer to an interrupt)."""

    team: str
    text: str | None = None
    resume: Any = None
    resuming: bool = False
    modes: list[str] = field(default_factory=lambda: ["values"])
    create_thread: bool = False
    strategy: str = "reject"
    webhook: str | None = None
    resumable: bool = False
    continuing: bool = False
    """No input and no command: go on past the breakpoint the thread is paused at."""
    interrupt_before: list[str] | None = None
    interrupt_after: list[str] | None = None
    metadata: dict[str, Any] | None = None
    """The run's `metadata`: kept with its turn, shown on the run and in the thread's state."""
    webhook_error: str | None = None
    """Why the run's webhook is not watched though the run went in (langgraph_webhooks.py)."""


def run_request(body: dict[str, Any]) -> RunRequest:
    unknown = sorted(set(body) - ACCEPTED)
    if unknown:
        raise Unsupported(f"run parameter(s) {', '.join(unknown)}")
    team = body.get("assistant_id")
    if not isinstance(team, str) or not team:
        raise BadRequest("'assistant_id' is required: the name of a team")
    _refuse_set(body)
    request = RunRequest(team=team, modes=stream_modes(body.get("stream_mode", "values")), webhook=body.get("webhook"),
                         resumable=body.get("stream_resumable") is True)
    request.create_thread = _choice(body, "if_not_exists", ("reject", "create"), "reject") == "create"
    request.strategy = _choice(body, "multitask_strategy", STRATEGIES, "reject")
    _choice(body, "on_disconnect", ("continue",), "continue")
    _choice(body, "on_completion", ("keep",), "keep")
    request.metadata = _metadata(body.get("metadata"))
    request.interrupt_before = breakpoint_names(body, "interrupt_before")
    request.interrupt_after = breakpoint_names(body, "interrupt_after")
    command, given = body.get("command"), body.get("input")
    if (command is not None or given is None) and (request.interrupt_before or request.interrupt_after
                                                   or request.metadata):
        raise Unsupported("interrupt_before/interrupt_after and metadata on a run that resumes (a turn's "
                          "breakpoints and metadata are set by the run that begins it)")
    if command is not None and given is not None:
        raise BadRequest("send either 'input' or 'command', not both")
    if command is not None:
        if not isinstance(command, dict) or set(command) - {"resume"}:
            extra = sorted(set(command) - {"resume"}) if isinstance(command, dict) else ["a non-object"]
            raise Unsupported(f"command {', '.join(map(str, extra))} (a command here is {{'resume': ...}})")
        if "resume" not in command:
            raise BadRequest("'command' needs 'resume': the answer to the interrupt")
        request.resume, request.resuming = command["resume"], True
        return request
    if given is None:  # LangGraph's input=None: on past a breakpoint
        request.resuming = request.continuing = True
        return request
    request.text = turn_text(given)
    return request


def breakpoint_names(body: dict[str, Any], name: str) -> list[str] | None:
    """A run's `interrupt_before`/`interrupt_after`: agents' names, or "*" (every agent)."""
    given = body.get(name)
    if given is None:
        return None
    names = [given] if given == "*" else given
    if not isinstance(names, list) or not all(isinstance(n, str) and 0 < len(n) <= 200 for n in names) \
            or len(names) > 100:
        raise BadRequest(f"'{name}' is \"*\" or a list of agents' names (a team's agents are its nodes)")
    return names or None


def _metadata(given: Any) -> dict[str, Any] | None:
    if given is not None and not isinstance(given, dict):
        raise BadRequest("'metadata' is an object")
    if given and len(json.dumps(given, default=str).encode()) > MAX_RUN_METADATA_BYTES:
        raise BadRequest(f"'metadata' is over {MAX_RUN_METADATA_BYTES:,} bytes as JSON")
    return given or None


def _refuse_set(body: dict[str, Any]) -> None:
    """The accepted fields this door takes only at their defaults, named when set otherwise."""
    if body.get("stream_subgraphs") not in (None, False):
        raise Unsupported("stream_subgraphs=true")
    for name in ("context", "feedback_keys"):
        if body.get(name):
            raise Unsupported(f"run {name} (the team's definition is its configuration)" if name == "context"
                              else f"run {name}")
    config = body.get("config")
    if config and not isinstance(config, dict):
        raise BadRequest("'config' is an object")
    given = sorted(k for k, v in (config or {}).items() if v and k != "recursion_limit")
    configurable = config.get("configurable") if isinstance(config, dict) else None
    if isinstance(configurable, dict) and configurable:
        given = [k for k in given if k != "configurable"] + [f"configurable.{k}" for k in sorted(configurable)]
    if given:
        raise Unsupported(f"run config {', '.join(given)[:200]} (the team's definition is its configuration; "
                          "a run's notes go in its metadata)")


def _choice(body: dict[str, Any], name: str, served: tuple[str, ...], default: str) -> str:
    value = body.get(name, default)
    if value is None:
        return default
    if value not in served:
        raise Unsupported(f"{name}={value!r} (served: {', '.join(served)})")
    return str(value)


def stream_modes(raw: Any) -> list[str]:
    modes = [raw] if isinstance(raw, str) else raw
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise BadRequest("'stream_mode' is a mode or a list of modes")
    for mode in modes:
        if mode not in STREAM_MODES:
            raise Unsupported(f"stream_mode {mode[:40]!r} (served: {', '.join(STREAM_MODES)})")
    return list(dict.fromkeys(modes)) or ["values"]  # each once: a resumable stream's Location names them


def turn_text(given: Any) -> str:
    """The turn's text: the one human message of `input.messages`."""
    messages = given.get("messages") if isinstance(given, dict) else None
    if not isinstance(given, dict) or set(given) - {"messages"} or not isinstance(messages, list):
        raise BadRequest("'input' is {'messages': [a human message]}: a team's state is its conversation")
    if len(messages) != 1:
        raise BadRequest(f"'input.messages' holds {len(messages)} messages: send one human message a run")
    text = _content(messages[0])
    if not text.strip():
        raise BadRequest("the message is empty")
    if len(text.encode("utf-8", "replace")) > MAX_TURN_BYTES:
        raise BadRequest(f"the message is over {MAX_TURN_BYTES:,} bytes")
    return encodable(text, "input.messages[0].content")


def _content(message: Any) -> str:
    if isinstance(message, str):
        return message
    if not isinstance(message, dict):
        raise BadRequest("a message is an object with 'role' (or 'type') and 'content'")
    role = message.get("role", message.get("type"))
    if role not in ("user", "human"):
        raise BadRequest(f"the input message's role is {role!r}: a run takes a human message")
    content = message.get("content")
    if isinstance(content, list):  # content blocks: their text
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) != len(content) or not all(isinstance(t, str) for t in texts):
            raise Unsupported("content blocks other than text")
        return "\n".join(t for t in texts if t)
    if not isinstance(content, str):
        raise BadRequest("a message's 'content' is a string or a list of text blocks")
    return content


def answer_of(resume: Any, question: Question) -> dict[str, Any]:
    """The reply a resume value gives `question`: an approval takes a strict yes or no (True,
    False, "yes", {"decisions": [{"type": "approve"}]}, ...); anything else asks again (400),
    the interrupt stays open. A question takes text."""
    if isinstance(resume, dict) and question.question_id in resume and len(resume) == 1:
        resume = resume[question.question_id]  # resumed by interrupt id
    if question.breakpoint and resume is None:  # LangGraph's way on past a breakpoint: resumed as it was
        return {"text": "yes", "approved": True}
    if question.kind != "approval":
        text = resume.get("text") if isinstance(resume, dict) else resume
        if not isinstance(text, str) or not text.strip():
            raise BadRequest(f"interrupt {question.question_id} asks a question: resume with its answer as text")
        return {"text": encodable(text, "command.resume")}
    approved = _decision(resume)
    if approved is None:
        shown = repr(resume)[:80]
        asked = ask_again(question.tool or (f"the team past the breakpoint after {question.agent}" if question.after
                                            else question.agent))
        raise BadRequest(f"{asked} ({shown} is not a plain yes or no; resume "
                         'with true, false, "yes", "no" or {"decisions": [{"type": "approve"}]})')
    return {"text": "yes" if approved else "no", "approved": approved}


def _decision(resume: Any) -> bool | None:
    if isinstance(resume, bool):
        return resume
    if isinstance(resume, str):
        return approval_of(resume)
    if isinstance(resume, dict) and isinstance(resume.get("approved"), bool) and len(resume) == 1:
        return bool(resume["approved"])
    decisions = resume.get("decisions") if isinstance(resume, dict) else None
    if isinstance(decisions, list) and len(decisions) == 1 and isinstance(decisions[0], dict):
        kind = decisions[0].get("type")
        return {"approve": True, "accept": True, "reject": False}.get(kind) if isinstance(kind, str) else None
    return None

"""A2A's protocol objects for a turn (a2a-sdk's protobuf types): a task as the spec shapes it,
its history from the thread's log, the text of a message, the caller's scope in a call's context. No Temporal, no HTTP."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError

from durable_teams.gateway.core.requests import MAX_TURN_BYTES
from durable_teams.gateway.core.turn_tasks import task_id
from durable_teams.workflows.a2a_tasks import TaskState
from durable_teams.workflows.messages import Message

PAUSED = {"INPUT_REQUIRED", "AUTH_REQUIRED"}


def text_of(message: pb.Message) -> str:
    """The text parts of a message, joined; `InvalidParamsError` when there is none, or more
    than a turn takes, or the message is not one a client may send (`check_message`)."""
    check_message(message)
    texts = [part.text for part in message.parts if part.WhichOneof("content") == "text"]
    if len(texts) != len(message.parts):
        raise InvalidParamsError("only text parts are understood here")
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidParamsError("the message has no text")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TURN_BYTES:
        raise InvalidParamsError(f"the message's text is over {MAX_TURN_BYTES:,} bytes")
    return text


def check_message(message: pb.Message) -> None:
    """A message a client sends has its `messageId` and is the user's (the spec's required
    fields; an agent's own messages, or a role the spec does not name, are not taken)."""
    if not message.message_id:
        raise InvalidParamsError("the message needs a messageId")
    if message.role != pb.ROLE_USER:
        raise InvalidParamsError("a message to an agent has role ROLE_USER")


def agent_message(thread: str, number: int, text: str) -> pb.Message:
    """The agent's status message; its id the same for the same words from any process."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return pb.Message(message_id=f"{task_id(thread, number)}-{digest}", context_id=thread,
                      task_id=task_id(thread, number), role=pb.ROLE_AGENT, parts=[pb.Part(text=text)])


def history_of(thread: str, number: int, log: Sequence[tuple[int, Message]]) -> list[pb.Message]:
    """Turn `number`'s log (index, message) as the task's history: the person's messages (the
    turn's and the answers to its questions) and what the agents said, oldest first. Tool
    calls and results, routing records and notices are the team's working, not messages."""
    history = []
    for index, message in log:
        if not message.content:
            continue
        said = message.role == "user" and message.kind == "message" and message.agent_run == 0
        answered = message.role == "tool" and message.kind == "human"
        spoke = message.role == "assistant" and message.kind in ("message", "error")
        if not (said or answered or spoke):
            continue
        history.append(pb.Message(
            message_id=f"{task_id(thread, number)}-m{index}", context_id=thread, task_id=task_id(thread, number),
            role=pb.ROLE_AGENT if spoke else pb.ROLE_USER, parts=[pb.Part(text=message.content)]))
    return history


def history_wanted(params: Any) -> int | None:
    """How many of the latest history messages a request wants (`historyLength`): None for
    all (not given), 0 for none; `InvalidParamsError` below 0."""
    if not params.HasField("history_length"):
        return None
    if params.history_length < 0:
        raise InvalidParamsError("historyLength must be 0 or more")
    return int(params.history_length)


def as_task(thread: str, number: int, found: TaskState) -> pb.Task:
    status = pb.TaskStatus(state=getattr(pb, f"TASK_STATE_{found.state}"))
    if found.text:
        status.message.CopyFrom(agent_message(thread, number, found.text))
    task = pb.Task(id=task_id(thread, number), context_id=thread, status=status)
    if found.state == "COMPLETED":
        task.artifacts.add(artifact_id="reply", name="reply", parts=[pb.Part(text=found.text)])
    return task


def state_of(task: pb.Task) -> TaskState:
    """A task's state and status text (durable_teams/workflows/a2a_tasks.py)."""
    text = task.status.message.parts[0].text if task.status.message.parts else ""
    return TaskState(pb.TaskState.Name(task.status.state).removeprefix("TASK_STATE_"), text)


def scope_in(context: ServerCallContext) -> str | None:
    """The caller's scope (None: an operator), as `ScopedContext` put it in the call's state."""
    return context.state.get("scope")


def user_in(context: ServerCallContext) -> str | None:
    """The end user a new context speaks for (its caller's token, `scopes.caller_identity`),
    as `ScopedContext` put it in the call's state."""
    user = context.state.get("user")
    return user if isinstance(user, str) else None

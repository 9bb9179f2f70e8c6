"""A2A's protocol objects for a turn (a2a-sdk's protobuf types): a task as the spec shapes it,
the text of a message, the caller's scope in a call's context. No Temporal, no HTTP."""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError

from durable_teams.gateway.a2a_tasks import TurnState, task_id

FINAL = {"COMPLETED", "FAILED", "CANCELED", "REJECTED"}
PAUSED = {"INPUT_REQUIRED", "AUTH_REQUIRED"}


def text_of(message: pb.Message) -> str:
    """The text parts of a message, joined; `InvalidParamsError` when there is none."""
    texts = [part.text for part in message.parts if part.WhichOneof("content") == "text"]
    if len(texts) != len(message.parts):
        raise InvalidParamsError("only text parts are understood here")
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidParamsError("the message has no text")
    return text


def agent_message(thread: str, number: int, text: str) -> pb.Message:
    return pb.Message(message_id=f"{task_id(thread, number)}-{abs(hash(text)) % 10**8}", context_id=thread,
                      task_id=task_id(thread, number), role=pb.ROLE_AGENT, parts=[pb.Part(text=text)])


def as_task(thread: str, number: int, found: TurnState) -> pb.Task:
    status = pb.TaskStatus(state=getattr(pb, f"TASK_STATE_{found.state}"))
    if found.text:
        status.message.CopyFrom(agent_message(thread, number, found.text))
    task = pb.Task(id=task_id(thread, number), context_id=thread, status=status)
    if found.state == "COMPLETED":
        task.artifacts.add(artifact_id="reply", name="reply", parts=[pb.Part(text=found.text)])
    return task


def scope_in(context: ServerCallContext) -> str | None:
    """The caller's scope (None: an operator), as `ScopedContext` put it in the call's state."""
    return context.state.get("scope")

"""A LangGraph run's SSE frames in each stream mode (langgraph_stream.py follows the run): the
frames of one message of the shared conversation, and those after the run's last message,
each numbered `<message index>.<frame>` so that a stream resumed with `Last-Event-ID` gives
the same frames under the same ids."""

from __future__ import annotations

import json
from typing import Any

from durable_teams.gateway.core.sse import sse_frame
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    RunRef,
    debug_events,
    interrupts_of,
    lc_message,
    values_of,
)
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import Question, TurnReply


class RunFrames:
    """The frames of a run (`RunStream`'s): its thread, run, team, the conversation read and
    how the run ended (`ending`) or what it asks (`interrupts`)."""

    thread: str
    run: RunRef
    team: str
    messages: list[Message]
    ending: TurnReply | None
    interrupts: list[Question]
    shown: str | None

    def metadata(self, node: str | None, step: int) -> dict[str, Any]:
        return {"thread_id": self.shown or self.thread, "run_id": self.run.id, "assistant_id": self.team,
                "graph_id": self.team, "langgraph_node": node, "langgraph_step": step}

    def message_frames(self, modes: list[str], messages: list[Message], index: int) -> list[str]:
        """The frames of message `index`: what its tool wrote to its stream writer (`custom`,
        as written while it ran: before the message), the values up to it, and each mode's
        event of it."""
        custom = messages[index].custom if "custom" in modes else None
        frames = [sse_frame("custom", json.dumps(data, separators=(",", ":"))) for data in custom or []]
        if "values" in modes:
            frames.append(sse_frame("values", values_of(messages[:index + 1])))
        message = messages[index]
        if message.role == "user" and message.kind == "message":  # the run's input: in `values`, no node's update
            return frames + self.debug_frames(modes, messages, index, None, None)
        node = node_of(messages, index)
        wire = lc_message(message, index)
        meta = self.metadata(node, index)
        if "updates" in modes:
            frames.append(sse_frame("updates", {node: {"messages": [wire]}}))
        if "messages-tuple" in modes:
            frames.append(sse_frame("messages", [wire, meta]))
        if "messages" in modes:
            frames.append(sse_frame("messages/metadata", {wire["id"]: {"metadata": meta}}))
            frames.append(sse_frame("messages/complete", [wire]))
        if "events" in modes:
            kind = "on_tool_end" if message.role == "tool" else "on_chat_model_end"
            frames.append(sse_frame("events", {"event": kind, "name": message.name or node, "run_id": self.run.id,
                                               "data": {"output": wire}, "metadata": meta,
                                               "tags": [], "parent_ids": [self.run.id]}))
        return frames + self.debug_frames(modes, messages, index, node, wire)

    def debug_frames(self, modes: list[str], messages: list[Message], index: int, node: str | None,
                     wire: dict[str, Any] | None) -> list[str]:
        if "debug" not in modes:
            return []
        return [sse_frame("debug", event)
                for event in debug_events(self.shown or self.thread, index, values_of(messages[:index + 1]), node, wire)]

    def end_frames(self, modes: list[str]) -> list[str]:
        frames = []
        if self.interrupts:  # a breakpoint's alone: {"__interrupt__": []} in updates, as LangGraph's
            waiting = interrupts_of(self.interrupts)
            for mode in ("values", "updates") if waiting else ("updates",):
                if mode in modes:
                    frames.append(sse_frame(mode, {"__interrupt__": waiting}))
        elif self.ending is not None and self.ending.status == "failed":
            frames.append(sse_frame("error", {"error": "RunFailed", "message": self.ending.text}))
        if "events" in modes:
            frames.append(sse_frame("events", self.chain_event(
                "on_chain_end", {"output": values_of(self.messages)})))
        return frames

    def chain_event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"event": kind, "name": self.team, "run_id": self.run.id, "data": data,
                "metadata": self.metadata(None, 0), "tags": [], "parent_ids": []}

    def final_values(self) -> dict[str, Any]:
        """What `wait` and `join` return: the state's values, with the interrupts when the run
        waits for a person, or `__error__` when the turn failed."""
        values = values_of(self.messages)
        if interrupts_of(self.interrupts):
            values["__interrupt__"] = interrupts_of(self.interrupts)
        elif self.ending is not None and self.ending.status == "failed":
            values["__error__"] = {"error": "RunFailed", "message": self.ending.text}
        return values


END = 10**9
"""The index the frames after the run's last message are numbered under."""


def frame_key(frame_id: str) -> tuple[int, int]:
    """A frame id (`<message index>.<frame>`) as what orders it; a malformed one orders first."""
    index, _, number = frame_id.partition(".")
    try:
        return int(index), int(number)
    except ValueError:
        return (-2, 0)


def numbered(index: int, frames: list[str], seen: tuple[int, int] | None) -> list[str]:
    """The frames of message `index` with their ids, those up to `seen` left out."""
    return [f"id: {index}.{n}\n{frame}" for n, frame in enumerate(frames)
            if seen is None or (index, n) > seen]


def node_of(messages: list[Message], index: int) -> str:
    """The agent (LangGraph's node) a message came from: an assistant message's author; a tool
    result's, the agent whose call it answers."""
    message = messages[index]
    if message.role == "assistant":
        return message.name or "agent"
    for earlier in range(index - 1, -1, -1):
        if messages[earlier].role == "assistant":
            return messages[earlier].name or "agent"
    return "agent"

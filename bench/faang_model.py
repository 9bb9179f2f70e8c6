"""The FAANG walkthrough as an OpenAI-compatible model (model name `faang-script`), for
servers that only take a model endpoint: durable-teams' worker and langgraph-supervisor's
graph under `langgraph dev` answer the same question from the same replies
(bench/langgraph_side_by_side.py). Which reply comes is read from the request alone (the tools
offered say which agent asks; the messages say how far it got), so any framework's way of
building the prompt gets the walkthrough's steps in order.
"""

from __future__ import annotations

import json
from typing import Any

MODEL = "faang-script"
HEADCOUNTS = [67_317, 164_000, 1_551_000, 14_000, 181_269]
ANSWER = "The combined headcount of the FAANG companies in 2024 is 1,977,586."
RESEARCH = ("The headcounts of the FAANG companies in 2024: Meta 67,317, Apple 164,000, "
            "Amazon 1,551,000, Netflix 14,000 and Google 181,269.")


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in body.get("tools") or []}


def _calls(messages: list[dict[str, Any]]) -> list[str]:
    """The names of the tool calls the messages hold, in order."""
    return [c.get("function", {}).get("name", "") for m in messages
            for c in (m.get("tool_calls") or []) if m.get("role") == "assistant"]


def faang_message(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for this request: a tool call or the text."""
    tools, messages = _tool_names(body), list(body.get("messages") or [])
    done = _calls(messages)
    if "web_search" in tools:  # the research expert: one search, then what it found
        if "web_search" in _since("transfer_to_research_expert", done):
            return {"role": "assistant", "content": RESEARCH}
        return _call(len(done), "web_search", query="Combined headcount of FAANG companies in 2024")
    if "add" in tools:  # the math expert: one addition at a time
        added = _since("transfer_to_math_expert", done).count("add")
        if added < len(HEADCOUNTS) - 1:
            return _call(len(done), "add", a=sum(HEADCOUNTS[:added + 1]), b=HEADCOUNTS[added + 1])
        return {"role": "assistant", "content": f"The sum is {sum(HEADCOUNTS):,}."}
    # the supervisor: research, then math, then the answer
    if "transfer_to_research_expert" not in done:
        return _call(len(done), "transfer_to_research_expert")
    if "transfer_to_math_expert" not in done:
        return _call(len(done), "transfer_to_math_expert")
    return {"role": "assistant", "content": ANSWER}


def _since(handoff: str, done: list[str]) -> list[str]:
    """The calls after the latest `handoff` (all of them when there is none)."""
    return done[len(done) - done[::-1].index(handoff):] if handoff in done else done


def _call(step: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{step}_{name}", "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def completion(body: dict[str, Any]) -> dict[str, Any]:
    message = faang_message(body)
    return {"id": "chatcmpl-faang", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def stream_events(body: dict[str, Any]) -> bytes:
    """The same completion as a Chat Completions stream (`stream: true`), whole."""
    message = faang_message(body)
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta = {"role": "assistant", "content": None, "tool_calls": [
            dict(call, index=i) for i, call in enumerate(message["tool_calls"])]}
    chunk = {"id": "chatcmpl-faang", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    events = [dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
              dict(chunk, choices=[{"index": 0, "delta": {},
                                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}])]
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(dict(chunk, choices=[], usage={"prompt_tokens": 10, "completion_tokens": 5,
                                                     "total_tokens": 15}))
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"

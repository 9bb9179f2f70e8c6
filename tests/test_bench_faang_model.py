"""The FAANG walkthrough as an OpenAI-compatible model (bench/faang_model.py), which both sides
of bench/langgraph_side_by_side.py call: the steps come in the walkthrough's order from the
request alone, as a completion and as a stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import faang_model

pytestmark = pytest.mark.pure


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n}} for n in names]


SUPERVISOR = tools("transfer_to_research_expert", "transfer_to_math_expert")


def step(messages: list[dict[str, Any]], offered: list[dict[str, Any]]) -> str:
    """Ask once, keep the reply (and a result for a tool call); the call or the text."""
    message = faang_model.completion({"messages": messages, "tools": offered})["choices"][0]["message"]
    messages.append(message)
    if message.get("tool_calls"):
        call = message["tool_calls"][0]["function"]
        messages.append({"role": "tool", "content": "ok"})
        return f"{call['name']}({call['arguments']})"
    return str(message["content"])


def test_the_walkthrough_in_order() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": faang_model.ANSWER[:10]}]
    seen = [step(messages, SUPERVISOR), step(messages, tools("web_search"))]
    seen.append(step(messages, tools("web_search")))
    seen.append(step(messages, SUPERVISOR))
    seen += [step(messages, tools("add", "multiply")) for _ in range(5)]
    seen.append(step(messages, SUPERVISOR))
    assert seen[0] == "transfer_to_research_expert({})"
    assert seen[1].startswith("web_search(") and seen[2] == faang_model.RESEARCH
    assert seen[3] == "transfer_to_math_expert({})"
    assert seen[4:8] == ['add({"a": 67317, "b": 164000})', 'add({"a": 231317, "b": 1551000})',
                         'add({"a": 1782317, "b": 14000})', 'add({"a": 1796317, "b": 181269})']
    assert seen[8] == "The sum is 1,977,586." and seen[9] == faang_model.ANSWER


def test_a_stream_carries_the_same_step() -> None:
    body = {"messages": [{"role": "user", "content": "q"}], "tools": SUPERVISOR, "stream": True,
            "stream_options": {"include_usage": True}}
    events = faang_model.stream_events(body).decode().split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-2]]
    (call,) = chunks[0]["choices"][0]["delta"]["tool_calls"]
    assert (call["index"], call["function"]["name"]) == (0, "transfer_to_research_expert")
    assert chunks[1]["choices"][0]["finish_reason"] == "tool_calls" and chunks[2]["usage"]["total_tokens"] == 15

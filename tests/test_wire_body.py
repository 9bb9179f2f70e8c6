"""The request body built from cached wire dicts is the one the openai client builds itself."""

from __future__ import annotations

import json

import openai
import pytest

from durable_teams.activities.model import OpenAIBackend
from durable_teams.activities.wire import (
    WireCache,
    encode_body,
    message_dict,
    stream_chat_completion,
    tool_dict,
)
from durable_teams.workflows.messages import Message, ModelRequest, ToolCall, ToolSpec

from .fake_openai import FakeOpenAI, completion

pytestmark = pytest.mark.pure

LOG = [
    Message(role="user", content="Plan a trip to Zürich \u2603 \"quoted\"", name="ana"),
    Message(role="assistant", content=None, name="planner",
            tool_calls=[ToolCall(id="c1", name="search", arguments='{"q": "hotels"}')]),
    Message(role="tool", content="3 hotels\nline two", name="search", tool_call_id="c1", scope=2),
    Message(role="assistant", content="Done.", name="planner", kind="handoff_back"),
]
TOOLS = [ToolSpec(name="search", description="Search.",
                  parameters={"type": "object", "properties": {"q": {"type": "string"}}})]
REQ = ModelRequest(workflow_id="w", run_id="r", agent="planner", model="m", view_id=0,
                   transcript_length=4, temperature=0.2, parallel_tool_calls=False,
                   output_schema={"type": "object"})


def uncached(instructions: str, log: list[Message]) -> tuple[list[dict], list[dict]]:
    """What the model activity built before the cache."""
    messages = [{"role": "system", "content": instructions}] if instructions else []
    return messages + [message_dict(m) for m in log], [tool_dict(t) for t in TOOLS]


def test_cached_wire_dicts_equal_the_uncached_ones_call_after_call() -> None:
    cache = WireCache()
    for upto in range(len(LOG) + 1):
        messages = cache.messages("Be brief.", LOG[:upto])
        assert (messages, cache.tools(TOOLS)) == uncached("Be brief.", LOG[:upto])
    assert cache.misses == len(LOG) + len(TOOLS)  # each message converted once
    edited = LOG[1].model_copy(update={"tool_calls": []})  # views copy what they change
    assert cache.messages("", [edited]) == [message_dict(edited)]


def test_the_body_is_what_the_openai_client_would_send() -> None:
    from openai._utils import maybe_transform
    from openai.types.chat import completion_create_params

    messages, tools = WireCache().messages("Be brief.", LOG), WireCache().tools(TOOLS)
    params = OpenAIBackend(base_url="http://127.0.0.1:9/v1").params(REQ, messages, tools)
    theirs = maybe_transform(params, completion_create_params.CompletionCreateParamsNonStreaming)
    assert json.loads(encode_body(params)) == json.loads(json.dumps(theirs))


async def test_the_endpoint_receives_the_same_request_either_way() -> None:
    messages, tools = uncached("Be brief.", LOG)
    with FakeOpenAI() as fake:
        fake.reply(completion("a"))
        fake.reply(completion("b"))
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        params = OpenAIBackend(base_url=fake.base_url).params(REQ, messages, tools)
        await client.chat.completions.create(**params)
        cache = WireCache()
        cached = OpenAIBackend(base_url=fake.base_url).params(
            REQ, cache.messages("Be brief.", LOG), cache.tools(TOOLS))
        async with stream_chat_completion(client, cached, 30.0) as resp:
            reply = json.loads(await resp.read())
    assert reply["choices"][0]["message"]["content"] == "b"
    assert fake.requests[0] == fake.requests[1]
    assert fake.paths[0] == fake.paths[1]
    for header in ("authorization", "content-type", "accept"):
        assert fake.headers[0][header] == fake.headers[1][header]


def test_a_stream_converts_only_what_extends_its_last_view() -> None:
    cache, stream = WireCache(), ("w", "r", 0)
    for upto in range(1, len(LOG) + 1):
        messages = cache.messages("Be brief.", LOG[:upto], stream)
        assert messages == uncached("Be brief.", LOG[:upto])[0]
        assert [json.loads(e) for e in messages.encodings] == messages
    assert (cache.extended, cache.misses) == (len(LOG) - 1, len(LOG))
    # a retry reading an older, shorter view; then a view that is not an extension (an edited
    # message in the middle: views copy what they strip); both converted from the start, right
    assert cache.messages("", LOG[:2], stream) == uncached("", LOG[:2])[0]
    edited = [LOG[0], LOG[1].model_copy(update={"tool_calls": []}), *LOG[2:]]
    assert cache.messages("", edited, stream) == uncached("", edited)[0]
    assert cache.extended == len(LOG) - 1
    # equal messages that are other objects (a replayed workflow's) still extend
    copies = [m.model_copy() for m in edited] + [Message(role="user", content="more")]
    assert cache.messages("", copies, stream) == uncached("", copies)[0]
    assert cache.extended == len(LOG)


def test_streams_are_bounded_by_count_and_bytes() -> None:
    cache = WireCache(max_streams=2)
    for i in range(5):
        cache.messages("", LOG, ("w", str(i), 0))
    assert len(cache._streams) == 2
    small = WireCache(max_bytes=1)
    small.messages("", LOG, ("w", "r", 0))
    assert len(small._streams) == 0 and small.stream_bytes == 0


def test_the_body_of_a_stream_is_what_the_openai_client_would_send() -> None:
    from openai._utils import maybe_transform
    from openai.types.chat import completion_create_params

    cache = WireCache()
    for upto in (2, len(LOG)):
        messages = cache.messages("Be brief.", LOG[:upto], ("w", "r", 0))
        params = OpenAIBackend(base_url="http://127.0.0.1:9/v1").params(REQ, messages, cache.tools(TOOLS))
        theirs = maybe_transform(params, completion_create_params.CompletionCreateParamsNonStreaming)
        assert json.loads(encode_body(params)) == json.loads(json.dumps(theirs))


def test_the_spliced_body_is_byte_for_byte_the_plain_encoding() -> None:
    from durable_teams.activities.wire import dumps

    cache = WireCache()
    for instructions, upto in [("", 0), ("", 1), ("Be brief.", 0), ("Be brief.", 1), ("", 3), ("Be brief.", 4)]:
        messages = cache.messages(instructions, LOG[:upto], ("w", "r", 0))
        for params in ({"messages": messages}, {"model": "m", "messages": messages},
                       {"model": "m", "messages": messages, "tools": cache.tools(TOOLS), "temperature": 0.2}):
            plain = {k: (list(map(dict, v)) if isinstance(v, list) else v) for k, v in params.items()}
            assert encode_body(params) == dumps(plain)


def test_an_agents_tools_rebuilt_equal_are_not_converted_again() -> None:
    cache = WireCache()
    first = cache.tools(TOOLS, ("w", "r", "planner"))
    again = cache.tools([t.model_copy() for t in TOOLS], ("w", "r", "planner"))  # new, equal objects
    assert first == again == [tool_dict(t) for t in TOOLS]
    assert (cache.misses, len(cache)) == (len(TOOLS), len(TOOLS))
    changed = [TOOLS[0].model_copy(update={"description": "Search the web."})]
    assert cache.tools(changed, ("w", "r", "planner")) == [tool_dict(changed[0])]


def test_a_finished_conversations_messages_are_not_kept_alive() -> None:
    import gc

    cache = WireCache()
    keep = cache.messages("", LOG, ("w", "kept", 0))  # LOG lives on: its entries and stream stay
    log = [m.model_copy() for m in LOG]
    for upto in range(1, len(log) + 1):
        cache.messages("", log[:upto], ("w", "done", 0))
    assert (len(cache), len(cache._streams)) == (2 * len(LOG), 2)
    del log
    gc.collect()
    assert cache.messages("", LOG, ("w", "kept", 0)) == keep  # the next call drops the collected
    assert (len(cache), len(cache._streams)) == (len(LOG), 1)
    assert cache.bytes == sum(len(e) for e in keep.encodings)
    assert cache.stream_bytes == cache.bytes

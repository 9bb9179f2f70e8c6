"""A hostile OpenAI-compatible endpoint against the real openai client path.

Every mode of tests/hostile_openai.py goes through `ModelActivities.call_model` with an
`OpenAIBackend` on 127.0.0.1, as attempt 1 and (when that is retryable) attempt 2, and the
exact outcome is asserted: the reply, or the error type, whether Temporal retries it, the
message (quoting the server, holding no secret) and how many requests the server received.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_teams.activities.model import ModelActivities, OpenAIBackend
from durable_teams.worker.devserver import free_port
from durable_teams.workflows.messages import Message, ModelRequest, ModelResponse, ModelView

from .fake_openai import FakeOpenAI
from .hostile_openai import ECHOED, HOSTILE, OWN_KEY

pytestmark = pytest.mark.pure

TIMEOUT = 1.0
"""Seconds a request to the hang and drip modes may take (they wait it out)."""
SLOW = ("hang", "drip")
MAX_BODY = 100_000


async def view(req: ModelRequest) -> ModelView:
    return ModelView(messages=[Message(role="user", content="What is 1+2?")], tools=[])


def env(attempt: int) -> ActivityEnvironment:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(  # no deadline: the backend's own timeout applies
        environment.info, attempt=attempt, start_to_close_timeout=None,
        schedule_to_close_timeout=None)
    return environment


async def call(fake: FakeOpenAI, mode: str, attempt: int = 1) -> ModelResponse:
    backend = OpenAIBackend(base_url=fake.base_url, api_key=OWN_KEY,
                            timeout=TIMEOUT if mode in SLOW else 30.0, max_body_bytes=MAX_BODY)
    req = ModelRequest(workflow_id="wf", run_id="run", agent="calc", model=f"hostile:{mode}",
                       agent_run=0, transcript_length=1)
    return await env(attempt).run(ModelActivities(backend, view).call_model, req)


@pytest.fixture(name="fake")
def hostile_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(modes=HOSTILE) as server:
        yield server


# mode: (content, [(tool name, arguments)], finish_reason)
ANSWERS: dict[str, tuple[str | None, list[tuple[str, str]], str | None]] = {
    "parts": ("Hello, world.", [], "stop"),
    "parts_mixed": ("plain bits", [], "stop"),
    "args_object": (None, [("add", '{"a": 1, "b": 2}')], "tool_calls"),
    "args_missing": (None, [("add", "")], "tool_calls"),
    "minimal": ("hi", [], None),
    "no_role_no_usage": ("ok", [], "stop"),
    "usage_garbage": ("ok", [], "stop"),
    "tool_call_no_id": ("", [("add", '{"a": 1, "b": 2}')], "stop"),
    "legacy_function_call": (None, [("add", '{"a": 2, "b": 2}')], "tool_calls"),
    "refusal": ("I can't help with that.", [], "stop"),
    "finish_max_tokens": ("Half an ans", [], "length"),
    "length": ("The answer is cut", [], "length"),
    "content_filter_text": ("Partly shown", [], "content_filter"),
    "text_plain_json": ("ok", [], "stop"),
    "no_content_type": ("ok", [], "stop"),
    "no_content_length": ("ok", [], "stop"),
    "error_with_choices": ("ok", [], "stop"),
}


@pytest.mark.parametrize("mode", sorted(ANSWERS))
@pytest.mark.slow  # over a second: out of the quick loop
async def test_odd_but_legal_responses_are_understood(fake: FakeOpenAI, mode: str) -> None:
    content, calls, finish = ANSWERS[mode]
    result = await call(fake, mode)
    assert result.message.content == content
    assert [(c.name, c.arguments) for c in result.message.tool_calls] == calls
    assert all(c.id for c in result.message.tool_calls)  # missing ids are stamped
    assert result.finish_reason == finish
    assert len(fake.requests) == 1


NO_ANSWER = "no text and no tool calls"
NOT_JSON = "not JSON"
NOT_ANSWER = "there is no reply to use"
# mode: (error type, retried after attempt 1, retried after attempt 2, texts the message holds)
FAILURES: dict[str, tuple[str, bool, bool, list[str]]] = {
    "empty": ("EmptyModelResponse", True, False, ["empty answer", NO_ANSWER]),
    "null_content": ("EmptyModelResponse", True, False, ["empty answer", NO_ANSWER]),
    "whitespace": ("EmptyModelResponse", True, False, ["empty answer", NO_ANSWER]),
    "empty_parts": ("EmptyModelResponse", True, False, ["empty answer", NO_ANSWER]),
    "length_empty": ("EmptyModelResponse", True, False, ["output token limit", "'length'"]),
    "content_filter": ("EmptyModelResponse", True, False, ["content filter", "'content_filter'"]),
    "truncated": ("ModelBadResponse", True, False, ["truncated or invalid JSON",
                                                    '{"id": "chatcmpl-test"']),
    "echo_truncated": ("ModelBadResponse", True, False, ["auth failed for Bearer ***"]),
    "empty_body": ("ModelBadResponse", True, False, ["HTTP 200 with an empty body"]),
    "html": ("ModelBadResponse", False, False, [
        f"{NOT_JSON} (text/html). Server said: 502 Bad Gateway 502 Bad Gateway The upstream "
        "model server did not answer. nginx/1.25"]),
    "html_as_json": ("ModelBadResponse", False, False, [f"{NOT_JSON} (application/json)",
                                                        "Server said: 502 Bad Gateway"]),
    "echo_html": ("ModelBadResponse", False, False, [f"{NOT_JSON} (text/html)",
                                                     "authorization: *** cookie: ***"]),
    "sse": ("ModelBadResponse", False, False, [f"{NOT_JSON} (text/event-stream)", "data: {"]),
    "binary": ("ModelBadResponse", False, False, [f"{NOT_JSON} (application/octet-stream)"]),
    "not_object": ("ModelBadResponse", False, False, ["not a Chat Completion object",
                                                      "[1, 2, 3]"]),
    "json_string": ("ModelBadResponse", False, False, ["not a Chat Completion", "All good!"]),
    "deep_json": ("ModelBadResponse", False, False, ["nested too deeply", "[[[["]),
    "no_choices": ("ModelBadResponse", False, False, ["with no choices", NOT_ANSWER,
                                                      "chatcmpl-test"]),
    "empty_choices": ("ModelBadResponse", False, False, ["with no choices", '"choices": []']),
    "choices_not_list": ("ModelBadResponse", False, False, ["choices that are not a list"]),
    "no_message": ("ModelBadResponse", False, False, ["a choice without a message"]),
    "message_is_string": ("ModelBadResponse", False, False, ["a choice without a message"]),
    "delta_not_message": ("ModelBadResponse", False, False, ["a choice without a message",
                                                             '"delta"']),
    "error_200": ("ModelErrorResponse", False, False, ["HTTP 200 with an error",
                                                       "The engine is currently overloaded."]),
    "error_200_string": ("ModelErrorResponse", False, False, ["upstream request timeout"]),
    "echo_200_error": ("ModelErrorResponse", False, False, ["invalid api-key: ***"]),
    "error_200_code_503": ("ModelServerError", True, True, ["(code 503)",
                                                            "No instances available"]),
    "error_200_code_400": ("ModelBadRequest", False, False, ["(code 400)", "context too long"]),
    "hang": ("ModelTimeout", True, True, [f"did not answer within {TIMEOUT:g} s"]),
    "drip": ("ModelTimeout", True, True, [f"did not answer within {TIMEOUT:g} s"]),
    "drop": ("ModelConnectionError", True, True, ["Server disconnected"]),
    "cut_body": ("ModelConnectionError", True, True, ["broke while its response was read"]),
    "bad_gzip": ("ModelBadResponse", False, False, ["could not be decoded", "DecodingError"]),
    "huge": ("ModelResponseTooLarge", False, False, [f"over the {MAX_BODY:,}-byte limit"]),
    "huge_unannounced": ("ModelResponseTooLarge", False, False, [f"{MAX_BODY:,}-byte limit"]),
    "echo_401": ("ModelAuthError", False, False, ["HTTP 401", "Bad key. Request headers:"]),
    "echo_500_headers": ("ModelServerError", True, True, ["HTTP 500", "upstream failed"]),
    "echo_own_key": ("ModelAuthError", False, False, ["HTTP 403", "The key *** may not use"]),
}


async def failure(fake: FakeOpenAI, mode: str, attempt: int) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await call(fake, mode, attempt)
    return caught.value


def assert_clean(text: str) -> None:
    for secret in (*ECHOED, OWN_KEY):
        assert secret not in text


@pytest.mark.parametrize("mode", sorted(FAILURES))
@pytest.mark.slow  # over a second: out of the quick loop
async def test_unusable_responses_fail_with_what_was_wrong(fake: FakeOpenAI, mode: str) -> None:
    kind, retry_first, retry_second, texts = FAILURES[mode]
    first = await failure(fake, mode, attempt=1)
    assert (first.type, not first.non_retryable) == (kind, retry_first)
    for text in texts:
        assert text in first.message
    assert_clean(first.message)
    assert len(first.message) < 1000  # a quote, never the whole page
    assert len(fake.requests) == 1
    if retry_first:
        second = await failure(fake, mode, attempt=2)
        assert (second.type, not second.non_retryable) == (kind, retry_second)
        assert len(fake.requests) == 2


def test_the_corpus_covers_every_mode() -> None:
    assert set(ANSWERS) | set(FAILURES) == set(HOSTILE)
    assert len(HOSTILE) >= 50


def test_empty_answer_message_says_it_was_asked_twice() -> None:
    from durable_teams.activities.model import refuse_empty

    empty = ModelResponse(message=Message(role="assistant", content=None))
    req: Any = ModelRequest(workflow_id="w", run_id="r", agent="calc", model="m", agent_run=0,
                            transcript_length=1)
    with pytest.raises(ApplicationError) as caught:
        refuse_empty(empty, req, 2)
    assert caught.value.message == ("The model 'm' gave calc an empty answer (no text and no "
                                    "tool calls; finish_reason None). It was asked twice.")
    assert caught.value.non_retryable


async def test_a_password_in_the_base_url_never_shows() -> None:
    port = free_port()  # nothing listens here
    backend = OpenAIBackend(base_url=f"http://user:pw-secret-55@127.0.0.1:{port}/v1",
                            api_key=OWN_KEY)
    assert backend.where() == f"http://user:***@127.0.0.1:{port}/v1/chat/completions"
    req = ModelRequest(workflow_id="w", run_id="r", agent="calc", model="m", agent_run=0,
                       transcript_length=1)
    with pytest.raises(ApplicationError) as caught:
        await backend.complete(req, [Message(role="user", content="hi")], [])
    assert caught.value.type == "ModelConnectionError" and not caught.value.non_retryable
    assert f"127.0.0.1:{port}" in caught.value.message
    assert "pw-secret-55" not in caught.value.message

"""Hostile and odd-but-legal responses of OpenAI-compatible servers, by name.

`HOSTILE[mode](request_body)` is the `Raw` response; a `FakeOpenAI(modes=HOSTILE)` serves it to
a request for model `hostile:<mode>`. The secrets below are what a misbehaving server echoes
back; none may reach an error message, a log or the workflow history.
"""

from __future__ import annotations

import json
from typing import Any

from .fake_openai import Mode, Raw, completion

ECHOED_KEY = "sk-proj-EchoedBackKey0123456789abcdef"
ECHOED_COOKIE = "session=cookie-secret-4242"
ECHOED_TOKEN = "bearer-secret-token-777"
ECHOED_API_KEY = "azure-api-key-secret-31337"
ECHOED = (ECHOED_KEY, ECHOED_COOKIE, "cookie-secret-4242", ECHOED_TOKEN, ECHOED_API_KEY)

HTML = ("<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>"
        "<p>The upstream model server did not answer.</p><hr>nginx/1.25</body></html>")


def body(**fields: Any) -> str:
    """A completion with `fields` replacing top-level keys (None removes the key)."""
    data = completion("ok")
    data.update(fields)
    return json.dumps({k: v for k, v in data.items() if v is not None})


def message(msg: dict[str, Any], finish: str | None = "stop", **choice: Any) -> str:
    """A completion whose first choice carries `msg` as its message, verbatim."""
    first = {"index": 0, "message": msg, "finish_reason": finish, **choice}
    return body(choices=[first])


def _echo_headers(req: dict[str, Any]) -> str:
    return (f"authorization: Bearer {ECHOED_TOKEN}\ncookie: {ECHOED_COOKIE}\n"
            f"x-api-key: {ECHOED_API_KEY}\napi-key: {ECHOED_API_KEY}\nkey: {ECHOED_KEY}")


def _raw(text: str, **kw: Any) -> Mode:
    return lambda req: Raw(text, **kw)


HOSTILE: dict[str, Mode] = {
    # odd but legal: must work
    "parts": _raw(message({"role": "assistant", "content": [
        {"type": "text", "text": "Hello, "}, {"type": "text", "text": "world."}]})),
    "parts_mixed": _raw(message({"role": "assistant", "content": [
        {"type": "image_url", "image_url": {"url": "data:,"}}, "plain ", {"text": "bits"}]})),
    "args_object": _raw(message({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]},
        "tool_calls")),
    "args_missing": _raw(message({"role": "assistant", "tool_calls": [
        {"id": "c1", "function": {"name": "add"}}]}, "tool_calls")),
    "minimal": _raw(json.dumps({"choices": [{"message": {"content": "hi"}}]})),
    "no_role_no_usage": _raw(body(usage=None, id=None, created=None, model=None)),
    "usage_garbage": _raw(body(usage={"prompt_tokens": "n/a", "completion_tokens": -3})),
    "tool_call_no_id": _raw(message({"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]})),
    "legacy_function_call": _raw(message({"role": "assistant", "content": None, "function_call": {
        "name": "add", "arguments": "{\"a\": 2, \"b\": 2}"}}, "function_call")),
    "refusal": _raw(message({"role": "assistant", "content": None,
                             "refusal": "I can't help with that."})),
    "finish_max_tokens": _raw(message({"role": "assistant", "content": "Half an ans"}, "MAX_TOKENS")),
    "length": _raw(message({"role": "assistant", "content": "The answer is cut"}, "length")),
    "content_filter_text": _raw(message({"role": "assistant", "content": "Partly shown"},
                                        "content_filter")),
    "text_plain_json": _raw(body(), content_type="text/plain"),
    "no_content_type": _raw(body(), content_type=""),
    "no_content_length": _raw(body(), content_length=False),
    "error_with_choices": _raw(body(error={"message": "ignored"})),
    # no answer: fail clearly
    "empty": _raw(message({"role": "assistant", "content": ""})),
    "null_content": _raw(message({"role": "assistant", "content": None})),
    "whitespace": _raw(message({"role": "assistant", "content": " \n\t "})),
    "empty_parts": _raw(message({"role": "assistant", "content": []})),
    "length_empty": _raw(message({"role": "assistant", "content": None}, "length")),
    "content_filter": _raw(message({"role": "assistant", "content": None}, "content_filter")),
    # malformed: fail fast, quoting the server
    "truncated": _raw(body()[:70]),
    "html": _raw(HTML, content_type="text/html; charset=utf-8"),
    "html_as_json": _raw(HTML),
    "sse": _raw('data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n',
                content_type="text/event-stream"),
    "binary": _raw(b"\x00\xff\xfe garbage \x89PNG", content_type="application/octet-stream"),
    "empty_body": _raw(""),
    "not_object": _raw("[1, 2, 3]"),
    "json_string": _raw('"All good!"'),
    "deep_json": _raw("[" * 40_000 + "]" * 40_000),
    "no_choices": _raw(body(choices=None)),
    "empty_choices": _raw(body(choices=[])),
    "choices_not_list": _raw(body(choices={"0": {"message": {"content": "x"}}})),
    "no_message": _raw(body(choices=[{"index": 0, "finish_reason": "stop"}])),
    "message_is_string": _raw(body(choices=[{"index": 0, "message": "hi"}])),
    "delta_not_message": _raw(body(choices=[{"index": 0, "delta": {"content": "hi"}}])),
    "error_200": _raw(json.dumps({"error": {"message": "The engine is currently overloaded.",
                                            "type": "server_error"}})),
    "error_200_string": _raw(json.dumps({"error": "upstream request timeout"})),
    "error_200_code_503": _raw(json.dumps({"error": {"message": "No instances available",
                                                    "code": 503}})),
    "error_200_code_400": _raw(json.dumps({"error": {"message": "context too long",
                                                    "code": "400"}})),
    # the transport misbehaves
    "hang": _raw(body(), delay=60.0),
    "drip": _raw(body(), drip=1.0),
    "drop": _raw("", drop=True),
    "cut_body": _raw(body(), declared_length=10_000),
    "bad_gzip": _raw(body(), headers={"Content-Encoding": "gzip"}),
    "huge": _raw(message({"role": "assistant", "content": "x" * 300_000})),
    "huge_unannounced": _raw(message({"role": "assistant", "content": "x" * 300_000}),
                             content_length=False),
    # secrets echoed back
    "echo_401": lambda req: Raw(json.dumps({"error": {"message": "Bad key. Request headers: "
                                                      + _echo_headers(req)}}), 401),
    "echo_500_headers": lambda req: Raw(json.dumps({"error": {"message": "upstream failed",
                                                              "headers": {
        "Authorization": f"Bearer {ECHOED_TOKEN}", "Cookie": ECHOED_COOKIE,
        "X-Api-Key": ECHOED_API_KEY}}}), 500, headers={"Set-Cookie": ECHOED_COOKIE}),
    "echo_html": lambda req: Raw(f"<pre>{_echo_headers(req)}</pre>", content_type="text/html"),
    "echo_200_error": lambda req: Raw(json.dumps({"error": {
        "message": f"invalid api-key: {ECHOED_API_KEY}; proxy-authorization: Basic "
                   f"dXNlcjpwYXNzd29yZA==; tried {ECHOED_KEY}"}})),
    "echo_truncated": lambda req: Raw('{"error": "auth failed for Bearer ' + ECHOED_TOKEN +
                                      ' cookie: ' + ECHOED_COOKIE),
}

OWN_KEY = "worker-key-plain-secret-9"
"""A worker API key with no tell-tale shape: only knowing it lets it be scrubbed."""
HOSTILE["echo_own_key"] = _raw(json.dumps({"error": {
    "message": f"The key {OWN_KEY} may not use this model."}}), status=403)

"""Secrets never reach a message or a printed URL: one scrub function (durable_teams/encryption/redact.py)."""

from __future__ import annotations

import logging

import pytest

from durable_teams.encryption.redact import mask_url, scrub
from durable_teams.worker import run as worker

pytestmark = pytest.mark.pure


@pytest.mark.parametrize("text,secret,kept", [
    ("Authorization: Bearer abc.def-123", "abc.def-123", "Authorization: ***"),
    ("proxy-authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "proxy-authorization: ***"),
    ("api-key: azure-0123456789", "azure-0123456789", "api-key: ***"),
    ("X-Api-Key=my-secret-value", "my-secret-value", "X-Api-Key=***"),
    ("Cookie: session=s3cr3t; other=1", "s3cr3t", "Cookie: ***"),
    ("set-cookie: id=abcd1234; Path=/", "abcd1234", "set-cookie: ***"),
    ('{"headers": {"x-api-key": "k-777-secret", "a": 1}}', "k-777-secret",
     '"x-api-key": "***", "a": 1'),
    ("{'Cookie': 'c-secret-1', 'Accept': 'json'}", "c-secret-1", "'Cookie': '***', 'Accept'"),
    ("used key sk-proj-AbCdEf0123456789 here", "AbCdEf0123456789", "used key sk-*** here"),
    ("token is Bearer tok_live_12345, retry", "tok_live_12345", "token is Bearer ***, retry"),
    ("see https://bob:hunter22@proxy.local/v1", "hunter22", "https://bob:***@proxy.local/v1"),
    ("GET /v1/models?key=AIzaSecret123&alt=json", "AIzaSecret123", "?key=***&alt=json"),
    ("http://h:1/v1?token=tok-secret-9&page=2 refused", "tok-secret-9", "?token=***&page=2 refused"),
    ("https://h/o?X-Amz-Signature=sig-secret-7&ok=1", "sig-secret-7", "?X-Amz-Signature=***&ok=1"),
    ("https://h/v1?session_id=sess-secret-3#top", "sess-secret-3", "?session_id=***#top"),
    ("https://h/v1?page=2&sort=name", "", "https://h/v1?page=2&sort=name"),
    ("The model's maximum context is 8192 tokens.", "", "The model's maximum context is 8192 tokens."),
])
def test_scrub_hides_credentials_and_keeps_the_rest(text: str, secret: str, kept: str) -> None:
    out = scrub(text)
    assert kept in out
    if secret:
        assert secret not in out


def test_scrub_hides_known_secrets_of_any_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plainkey-9999")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://me:p%40ss-word@host/v1")
    out = scrub("echo plainkey-9999 and p@ss-word and p%40ss-word and given-one", ["given-one"])
    assert out == "echo *** and *** and *** and ***"


def test_mask_url() -> None:
    assert mask_url("https://user:secret@host:8443/v1") == "https://user:***@host:8443/v1"
    assert mask_url("https://:secret@host/v1") == "https://:***@host/v1"
    assert mask_url("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"
    assert mask_url("https://host/v1?api-key=abc123") == "https://host/v1?api-key=***"


def test_the_worker_start_line_masks_the_password(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://user:pw-secret-55@models.example/v1")
    worker.model_backend()
    out = capsys.readouterr().out
    assert out == "Model: live, OpenAI-compatible endpoint at https://user:***@models.example/v1\n"


async def test_the_http_clients_log_lines_hide_a_url_password(
        caplog: pytest.LogCaptureFixture) -> None:
    from durable_teams.activities.model import OpenAIBackend
    from durable_teams.workflows.messages import Message, ModelRequest

    from .fake_openai import FakeOpenAI, completion

    with FakeOpenAI() as fake, caplog.at_level(logging.DEBUG):
        fake.reply(completion("hi"))
        backend = OpenAIBackend(base_url=fake.base_url.replace("//", "//bob:pw-secret-55@"),
                                api_key="k-secret-0001")
        req = ModelRequest(workflow_id="w", run_id="r", agent="a", model="m", agent_run=0,
                           transcript_length=1)
        reply = await backend.complete(req, [Message(role="user", content="x")], [])
    assert reply.message.content == "hi"
    assert "HTTP Request: POST http://bob:***@127.0.0.1" in caplog.text  # logged, masked
    assert "pw-secret-55" not in caplog.text and "k-secret-0001" not in caplog.text

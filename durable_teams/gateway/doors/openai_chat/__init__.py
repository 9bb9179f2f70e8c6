"""OpenAI Chat Completions: `POST /v1/chat/completions` (door.py) and the teams as models,
`GET /v1/models` (models.py); docs/gateway.md."""

from __future__ import annotations

from starlette.routing import Route

from durable_teams.gateway.core.mounts import Mount, Serving


def mount(serving: Serving) -> Mount:
    from durable_teams.gateway.doors.openai_chat.door import chat_completions
    from durable_teams.gateway.doors.openai_chat.models import model, models

    return Mount([Route("/v1/chat/completions", chat_completions, methods=["POST"]),
                  Route("/v1/models", models), Route("/v1/models/{model:path}", model)])

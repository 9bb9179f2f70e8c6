"""Routing model names to backends by prefix, as pydantic-ai does with "openai:gpt-4o".

`ModelRouter({"openai": OpenAIBackend(), "scripted": ScriptedModel(...)}, default=...)` is a
`ModelBackend`: a model named `<prefix>:<name>` with a known prefix goes to that backend as
`<name>`; any other name (no prefix, or one that is part of the model's own name, such as
Ollama's `llama3:8b`) goes to `default` unchanged, so a worker with one backend behaves as
before.
"""

from __future__ import annotations

from collections.abc import Mapping

from temporalio.exceptions import ApplicationError

from durable_teams.workflows.messages import Message, ModelRequest, ModelResponse, ToolSpec

from .model import ModelBackend


class ModelRouter:
    """A `ModelBackend` that hands each call to the backend its model name's prefix names."""

    def __init__(self, routes: Mapping[str, ModelBackend], default: ModelBackend | None = None,
                 ) -> None:
        self.routes = dict(routes)
        self.default = default

    def route(self, req: ModelRequest) -> tuple[ModelBackend, ModelRequest]:
        """The backend for `req`, and the request it gets (its model name without the prefix)."""
        prefix, sep, name = req.model.partition(":")
        if sep and prefix in self.routes:
            return self.routes[prefix], req.model_copy(update={"model": name})
        if self.default is not None:
            return self.default, req
        known = ", ".join(f"{p}:" for p in sorted(self.routes)) or "none"
        raise ApplicationError(
            f"No model backend on this worker serves model {req.model!r} (agent {req.agent}): "
            f"name it with one of the prefixes {known}, or give the worker a default backend.",
            type="ModelNotRouted", non_retryable=True)

    async def complete(
        self, req: ModelRequest, messages: list[Message], tools: list[ToolSpec]
    ) -> ModelResponse:
        backend, routed = self.route(req)
        return await backend.complete(routed, messages, tools)

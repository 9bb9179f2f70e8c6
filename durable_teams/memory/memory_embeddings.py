"""Semantic search: vectors from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM,
Ollama, LM Studio), configured on the worker. The API key is read from the environment, never
written to history or logs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .store import Embedder


class OpenAIEmbedder(Embedder):
    """Embeds with `model` at `base_url` (default: OPENAI_BASE_URL, else OpenAI's)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 client: Any = None) -> None:
        self.model = model
        self._client = client
        self._base_url = base_url
        self._api_key = api_key

    def _openai(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            # a local server needs no key, but the SDK refuses None
            key = self._api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
            self._client = AsyncOpenAI(base_url=self._base_url, api_key=key, max_retries=2)
        return self._client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        reply = await self._openai().embeddings.create(model=self.model, input=list(texts))
        return [list(d.embedding) for d in sorted(reply.data, key=lambda d: d.index)]

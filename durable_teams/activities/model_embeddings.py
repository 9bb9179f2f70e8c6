"""The `embed_texts` activity: embeddings for matching intents by meaning (workflows/intents.py).

The workflow sends the texts and compares the vectors it gets back; the call goes to the
worker's model backend when it can embed (`OpenAIBackend.embed`: an OpenAI-compatible
`/v1/embeddings`), with the model calls' error mapping (retryable or not, a readable message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from .model_errors import raise_for_openai_error

if TYPE_CHECKING:
    import openai

MAX_TEXTS = 2048
"""Texts one call embeds at most (OpenAI's limit per request)."""


async def openai_embed(client: openai.AsyncOpenAI, model: str, texts: list[str], seconds: float) -> list[list[float]]:
    """`client.embeddings.create`, errors mapped as a model call's; vectors in input order,
    rounded to 6 decimals (history holds them; cosine similarity does not need more)."""
    import openai  # loaded already: `client` is its (activities/model.py)

    try:
        response = await client.embeddings.create(model=model, input=texts, timeout=seconds)
    except openai.OpenAIError as err:
        raise_for_openai_error(err, model, seconds)
    data = sorted(response.data, key=lambda d: d.index)
    return [[round(float(x), 6) for x in d.embedding] for d in data]


class EmbeddingActivities:
    """`embed_texts`, bound to the worker's model backend."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    @activity.defn(name="embed_texts")
    async def embed_texts(self, model: str, texts: list[str]) -> list[list[float]]:
        """The embeddings of `texts` by `model`, in order."""
        embed = getattr(self.backend, "embed", None)
        if embed is None:
            raise ApplicationError(
                f"This worker's model backend ({type(self.backend).__name__}) cannot embed text, "
                "so intents are matched exactly only. Configure OPENAI_BASE_URL / OPENAI_API_KEY "
                "on the worker for an embeddings endpoint.", type="EmbeddingsUnavailable", non_retryable=True)
        if len(texts) > MAX_TEXTS:
            raise ApplicationError(f"{len(texts)} texts to embed, over the {MAX_TEXTS} a call takes.",
                                   type="EmbeddingsTooMany", non_retryable=True)
        vectors: list[list[float]] = await embed(model, texts)
        return vectors

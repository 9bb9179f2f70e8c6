"""Built-in memory tools an agent can be given: `remember`, `recall` and `forget`, over the
worker's store (LangGraph's memory tools, made durable).

Scope (docs/architecture.md, "Tenants and users"): the conversation's user when its context variables hold a `user_id`
(set by whoever starts it: the gateway from a request's `user`, the CLI's `--user`,
`ConversationInput(context={"user_id": ...})`), namespace `("users", user_id, "memories")`;
otherwise its team, `("teams", team, "memories")`, the team read from the conversation's
`Team` label. A conversation of a tenant (a gateway scope, the CLI's `--tenant`: its
`tenant_id` context variable) keeps the same under `("tenants", tenant, ...)`: no tenant reads
another's memories, nor a tenant's those of no tenant. A user's memories follow that user into
every conversation of their tenant, of every team that uses these tools on the same store.

Each tool is idempotent: `remember` without a key names the item after the call's idempotency
key, so a write retried after a timeout replaces the item it wrote instead of adding a second.
What a tool returns is bounded (`MAX_RECALLED`, `MAX_TEXT_CHARS`): a large store never bloats
the conversation's history.
"""

from __future__ import annotations

import hashlib
from typing import Any

from durable_teams.teams.tools import RetryableToolError, tool
from durable_teams.workflows.tenancy import tenant_of, user_of

from .store import Namespace, Store, StoreError

__all__ = ["MEMORY_TOOLS", "forget", "recall", "remember"]

MAX_RECALLED = 20
MAX_TEXT_CHARS = 2000
"""A remembered text is at most this long (the model is told to be brief)."""


async def _team() -> str:
    """The conversation's team, from its `Team` label (one describe call); "default" when the
    label is unset or the activity has no client (a unit test)."""
    from temporalio import activity

    from durable_teams.workflows.labels import TEAM

    try:
        workflow_id = activity.info().workflow_id or ""
        described = await activity.client().get_workflow_handle(workflow_id).describe()
    except RuntimeError:  # not in an activity, or one run without a client
        return "default"
    return described.typed_search_attributes.get(TEAM) or "default"


async def scope(context_variables: dict[str, Any]) -> Namespace:
    """The namespace the memory tools use in this conversation."""
    tenant, user = tenant_of(context_variables), user_of(context_variables)
    own: Namespace = ("users", user, "memories") if user else ("teams", await _team(), "memories")
    return ("tenants", tenant, *own) if tenant else own


def _retryable(err: Exception) -> Exception:
    """A store that cannot be reached is retried by Temporal (the tools are idempotent); a
    refused value is the model's to fix."""
    return err if isinstance(err, StoreError) else RetryableToolError(f"the memory store failed: {err}")


@tool(idempotent=True)
async def remember(text: str, context_variables: dict[str, Any], store: Store,
                   idempotency_key: str, key: str | None = None) -> str:
    """Remember a fact about the user (a preference, a detail they gave) for later conversations.

    Args:
        text: The fact, in one or two sentences.
        key: A short name for it (e.g. "favorite_color"), so a later fact with the same name
            replaces it; leave it out to keep it beside the others.
    """
    if len(text) > MAX_TEXT_CHARS:
        return f"Error: keep it under {MAX_TEXT_CHARS} characters (got {len(text)})."
    key = key or "m-" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:16]
    try:
        await store.put(await scope(context_variables), key, {"text": text})
    except Exception as err:
        raise _retryable(err) from None
    return f"Remembered ({key})."


@tool(idempotent=True)
async def recall(context_variables: dict[str, Any], store: Store, query: str = "",
                 limit: int = 5) -> str:
    """Recall what was remembered about the user, most relevant first.

    Args:
        query: What to look for (words or a question); empty for the most recent.
        limit: How many facts to return (at most 20).
    """
    limit = max(1, min(limit, MAX_RECALLED))
    try:
        found = await store.search(await scope(context_variables), query=query or None, limit=limit)
    except Exception as err:
        raise _retryable(err) from None
    if not found:
        return "Nothing remembered" + (f" about {query!r}." if query else ".")
    return "\n".join(f"- ({item.key}) {str(item.value.get('text', item.value))[:MAX_TEXT_CHARS]}"
                     for item in found)


@tool(idempotent=True)
async def forget(key: str, context_variables: dict[str, Any], store: Store) -> str:
    """Forget one remembered fact, by the key `recall` shows for it.

    Args:
        key: The fact's key.
    """
    try:
        gone = await store.delete(await scope(context_variables), key)
    except Exception as err:
        raise _retryable(err) from None
    return f"Forgot {key}." if gone else f"Nothing was remembered under {key!r}."


MEMORY_TOOLS = (remember, recall, forget)
"""`Agent(tools=[*MEMORY_TOOLS])` gives an agent all three."""

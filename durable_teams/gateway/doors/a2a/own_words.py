"""A2A's errors in the caller's words: a thread in the message of an error the core raised
(naming a workflow) named as the caller names it, a tenant's own id
(durable_teams/gateway/core/tenant_ids.py). Applied to each of the door's `on_*` methods."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from a2a.server.context import ServerCallContext
from a2a.utils.errors import A2AError, InternalError

from durable_teams.gateway.core.tenant_ids import in_own_words
from durable_teams.gateway.doors.a2a.wire import scope_in

T = TypeVar("T", bound=type)


@contextmanager
def callers_words(context: object) -> Iterator[None]:
    """An error the core raised inside (a refusal naming a workflow), its message by the
    caller's ids: the SDK's `InternalError`, as it would be anyway. The door's own A2A errors
    name threads and tasks by the caller's ids already, and pass as they are."""
    scope = scope_in(context) if isinstance(context, ServerCallContext) else None
    try:
        yield
    except A2AError:
        raise
    except Exception as err:
        said = str(err)
        renamed = in_own_words(scope, said)
        if renamed == said:
            raise
        raise InternalError(renamed) from err


def wrapped(method: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(method):
        @functools.wraps(method)
        async def streaming(self: Any, params: Any, context: Any, *args: Any) -> AsyncGenerator[Any]:
            with callers_words(context):
                async for event in method(self, params, context, *args):
                    yield event
        return streaming

    @functools.wraps(method)
    async def answering(self: Any, params: Any, context: Any, *args: Any) -> Any:
        with callers_words(context):
            return await method(self, params, context, *args)
    return answering


def in_callers_words(cls: T) -> T:
    """`cls` with each `on_*` request method's errors in its caller's words."""
    for name, method in list(vars(cls).items()):
        if name.startswith("on_") and (inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)):
            setattr(cls, name, wrapped(method))
    return cls

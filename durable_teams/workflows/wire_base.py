"""The base of every wire type (what travels through Temporal): pydantic models that refuse
unknown fields (`Wire`) or, read back by the other side, ignore them (`Reply`), and the fields
that keep recorded histories and older workers reading as before (left out of the wire when
unset, stored under the names histories use). Plain data, safe inside the workflow sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

WIRE_CONFIG = ConfigDict(extra="forbid", serialize_by_alias=True)


def optional_cap() -> Any:
    """An optional positive limit, left out of the wire when unset."""
    return left_out_when_unset(gt=0)


def left_out_when_unset(**constraints: Any) -> Any:
    """An optional field left out of the wire when None, so inputs without it read exactly as
    before, by older workers too (who refuse fields they do not know)."""
    return Field(default=None, exclude_if=lambda value: value is None, **constraints)


def agent_run_field(*, wire_name: str, **default: int) -> Any:
    """An agent run's id (`transcript.AgentRun.id`; 0 = the shared conversation) under its one
    name, `agent_run`, stored under the name recorded histories use (`scope` on a message,
    `view_id` on a model request), which it is also read by."""
    return Field(**default, validation_alias=AliasChoices("agent_run", wire_name),  # type: ignore[call-overload]
                 serialization_alias=wire_name)


class Wire(BaseModel):
    """Base for wire types: unknown fields are an error, so typos never pass silently. (The
    specs built from `options` are pydantic dataclasses with the same config.)"""

    model_config = WIRE_CONFIG

    def model_copy(self: _W, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> _W:
        """pydantic's `model_copy`, except that `update` may name a field by its wire name and
        a key that is no field is an error (pydantic would set it silently)."""
        if update:
            update = {_field_name(type(self), key): value for key, value in update.items()}
        return super().model_copy(update=update, deep=deep)


_W = TypeVar("_W", bound=Wire)


def _field_name(model: type[BaseModel], key: str) -> str:
    if key in model.model_fields:
        return key
    for name, info in model.model_fields.items():
        if key == info.serialization_alias:
            return name
    raise TypeError(f"{model.__name__} has no field {key!r}")


class Reply(Wire):
    """Base for what one side reads back from the other (workflow results, query results,
    activity results). Fields it does not know are ignored rather than refused, so a worker can
    be upgraded before its clients (or one worker before another) without breaking them:
    a newer side may add fields, never change what an existing one means."""

    model_config = ConfigDict(extra="ignore", serialize_by_alias=True)

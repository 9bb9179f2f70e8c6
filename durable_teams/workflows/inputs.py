"""Checking what a client sends (workflow input, signal and update arguments) inside the
workflow, so a malformed one gets a readable answer instead of wedging the conversation.

Why here and not in the SDK's decoder: Temporal decodes a workflow's input before any workflow
code runs, and a value that does not fit the declared type fails the *workflow task*, which the
server retries forever (the conversation sits RUNNING with no reason anyone can read). So the
workflow's entry points declare no argument types to the SDK (they take `*extra`, which makes
the SDK decode plain JSON, or hand over an `Undecodable` from the worker's converter,
durable_teams/worker/tolerant_converter.py), and the values are validated here against the wire types, with
messages that name the field and what was expected. Validating the decoded JSON (pydantic's
lax Python mode) builds the same models the SDK's JSON-mode decoding did, so recorded
histories replay unchanged (tests/test_replay.py). Pure: no Temporal imports.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import fork_resume
from .messages import Message
from .state import ConversationInput, ConversationState, RefusedSignal

M = TypeVar("M", bound=BaseModel)

MAX_ERRORS = 5
"""Validation errors named in one message; the rest are counted."""
KEEP_REFUSED = 50
"""Refused signals kept in state for the `status` query (all are counted)."""
MAX_NOTE_CHARS = 500


class InvalidInput(ValueError):
    """What a client sent does not fit; the message says which field and what was expected."""


@dataclass(frozen=True)
class Undecodable:
    """A payload that could not be decoded at all (its bytes do not match its encoding), as
    the worker's payload converter hands it over (durable_teams/worker/tolerant_converter.py)."""

    encoding: str
    reason: str
    preview: bytes


def decode(model: type[M], values: Sequence[Any], what: str) -> M:
    """The one argument in `values` (as the SDK decoded it: JSON as Python values, None for a
    null or missing payload) validated as `model`. Raises `InvalidInput` naming `what`
    (e.g. "workflow input", "post_message") and the problem."""
    expected = f"one {model.__name__} ({_fields(model)})"
    values = list(values)
    for n, value in enumerate(values, 1):
        if isinstance(value, Undecodable):
            raise InvalidInput(
                f"{what}: value {n} could not be decoded as {value.encoding}: {value.reason}; "
                f"got {_preview(value.preview)}")
    if not values or (len(values) == 1 and values[0] is None):
        raise InvalidInput(f"{what}: no value was sent; expected {expected}")
    if len(values) > 1:
        raise InvalidInput(f"{what}: {len(values)} values were sent; expected {expected}")
    value = values[0]
    if isinstance(value, model):
        return value
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{what}: expected a JSON object, {expected}; got {_kind(value)} {_preview(value)}")
    try:
        return model.model_validate(value)
    except ValidationError as err:
        raise InvalidInput(f"{what}: {describe(err, model)}") from None


def describe(err: ValidationError, model: type[BaseModel]) -> str:
    """A pydantic error as `field: problem` parts, unknown fields with a suggestion."""
    parts = []
    for e in err.errors()[:MAX_ERRORS]:
        loc = ".".join(str(p) for p in e["loc"]) or model.__name__
        if e["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            parts.append(_unknown_field(model, e["loc"], loc))
        elif e["type"] == "missing":
            parts.append(f"{loc}: required field missing")
        else:
            parts.append(f"{loc}: {e['msg'][0].lower()}{e['msg'][1:]}, got {_preview(e.get('input'))}")
    more = len(err.errors()) - MAX_ERRORS
    return "; ".join(parts) + (f"; and {more} more problem(s)" if more > 0 else "")


def _unknown_field(model: type[BaseModel], path: tuple[Any, ...], loc: str) -> str:
    owner = _model_at(model, path[:-1])
    if owner is None:
        return f"{loc}: unknown field"
    known = list(_wire_fields(owner))
    close = difflib.get_close_matches(str(path[-1]), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{loc}: unknown field{hint}; {owner.__name__} has: {', '.join(known)}"


def _wire_fields(cls: Any) -> dict[str, Any]:
    """A model's (or pydantic dataclass's) fields by the names they have on the wire."""
    fields = getattr(cls, "__pydantic_fields__", None) or {}
    return {(f.serialization_alias or name): f for name, f in fields.items()}


def _model_at(model: type[BaseModel], path: tuple[Any, ...]) -> Any:
    """The model class found by following field names in `path` (None if it leaves models)."""
    current: Any = model
    for step in path:
        field = _wire_fields(current).get(str(step)) if current is not None else None
        if field is not None:  # else a list index or dict key: `current` is the item model
            current = _model_in(field.annotation)
    return current if _wire_fields(current) else None


def _model_in(annotation: Any) -> Any:
    """The model class inside an annotation such as `X | None`, `list[X]`, `dict[str, X]`."""
    if isinstance(annotation, type) and hasattr(annotation, "__pydantic_fields__"):
        return annotation
    for arg in reversed(getattr(annotation, "__args__", ())):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _fields(model: type[BaseModel]) -> str:
    fields = _wire_fields(model)
    required = [n for n, f in fields.items() if f.is_required()]
    optional = [n for n, f in fields.items() if not f.is_required()]
    parts = [f"required: {', '.join(required)}"] if required else []
    if optional:
        parts.append(f"optional: {', '.join(optional)}")
    return "; ".join(parts)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "a number", float: "a number", list: "a list",
            bytes: "raw bytes"}.get(type(value), f"a {type(value).__name__}")


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def start_problem(inp: ConversationInput, max_task_bytes: int, continued: bool) -> str | None:
    """Why a well-formed `ConversationInput` still cannot start a conversation, or None.
    `continued`: this run was started by continue-as-new."""
    if inp.state is not None:  # a conversation under way, carried by continue-as-new
        if continued:
            return None
        if inp.forked_from is None:
            return ("workflow input: 'state' is set by continue-as-new and forks only (it "
                    "carries a conversation under way); leave it out")
        problem = fork_resume.fork_state_problem(inp.state)
        if problem is not None:
            return problem
        if inp.task is not None and not inp.task.strip():
            return "workflow input: 'task' is empty; give the fork's first message, or leave it out"
        return None
    if inp.team is None and not (inp.team_name or "").strip():
        return ("workflow input: give 'team' (a team spec) or 'team_name' (a team the worker "
                "serves); neither was set")
    if inp.task is not None:
        if not inp.task.strip():
            return "workflow input: 'task' is empty; give the first user message, or leave it out"
        if len(inp.task.encode("utf-8", "replace")) > max_task_bytes:
            return f"workflow input: 'task' is over {max_task_bytes:,} bytes"
    elif inp.single_turn and not inp.history:
        return ("workflow input: a single-turn run needs 'task' (the user's message) or "
                "'history'; set single_turn=false to start a conversation that waits for turns")
    return None


def refuse(state: ConversationState, signal: str, reason: str, at: datetime) -> None:
    """Record a signal the workflow could not use where people look: the `status` query and
    the transcript (a "notice" no model is shown)."""
    state.refused_signal_count += 1
    state.refused_signals.append(RefusedSignal(signal=signal, reason=reason, at=at))
    del state.refused_signals[:-KEEP_REFUSED]
    text = f"Refused signal {signal}: {reason.removeprefix(f'{signal}: ')}"
    state.transcript.append(Message(
        role="system", name="durable-teams", kind="notice", content=text[:MAX_NOTE_CHARS]))

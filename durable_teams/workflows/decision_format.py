"""The "llm-decision" strategy's wire format, pure: the prompt that asks for a JSON routing
decision, its JSON schema (sent as `response_format`), and the parser that turns the model's
reply into a `RoutingDecision` or into the feedback sent back to it. The loop that calls the
model is workflows/deciding.py."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from .handoff import normalize_agent_name
from .messages import AgentSpec, RoutingDecision


class RoutingDecisionOutput(BaseModel):
    """What the model must answer under "llm-decision". `targetAgent` and `agent` are accepted
    as spellings of `target`; unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    target: str = Field(validation_alias=AliasChoices("target", "targetAgent", "target_agent", "agent"))
    reasoning: str = ""
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    """0.8 when the model leaves it out (agentforge's default)."""


def decision_schema(agents: Sequence[str]) -> dict:
    """JSON schema of the decision, with the agent names as the only allowed targets."""
    return {
        "type": "object",
        "properties": {
            "target": {"type": "string", "enum": list(agents)},
            "reasoning": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["target", "reasoning", "confidence"],
        "additionalProperties": False,
    }


def decision_instructions(agents: Sequence[AgentSpec]) -> str:
    """The part of the supervisor's prompt that asks for a JSON decision."""
    lines = []
    for a in agents:
        about = a.description or ", ".join(a.skills) or "no description"
        lines.append(f"- {a.name}: {about}")
    return (
        "Choose the one agent that should handle the user's latest message. The agents:\n"
        + "\n".join(lines)
        + '\nReply with only a JSON object: {"target": "<agent name>", "reasoning": '
        '"<one sentence>", "confidence": <a number from 0 to 1>}.'
    )


def decision_feedback(why: str, agents: Sequence[str]) -> str:
    """The message sent back to the model when its decision cannot be used."""
    return (f"{why}. Reply with JSON {{target, reasoning, confidence}}; target must be one of: "
            f"{', '.join(agents)}")


_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_object(text: str) -> object:
    """The JSON value in `text`: inside the first ``` fence if there is one, else the whole
    text, else the first `{...}` that parses. Raises ValueError when there is none."""
    fenced = _FENCE.search(text)
    body = (fenced.group(1) if fenced else text).strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(body) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(body, start)
        except ValueError:
            continue
        return value
    raise ValueError("no JSON object")


def _resolve_target(target: str, agents: Sequence[str]) -> str | None:
    """`target` as one of `agents`: exact, else by normalised name (`Math Expert`,
    `transfer_to_math_expert`), when that names exactly one agent."""
    if target in agents:
        return target
    wanted = normalize_agent_name(target)
    if wanted.startswith("transfer_to_"):
        wanted = wanted[len("transfer_to_"):]
    found = [a for a in agents if normalize_agent_name(a) == wanted]
    return found[0] if len(found) == 1 else None


def _validation_text(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "decision"
        parts.append(f"{field}: {e['msg']}")
    return "; ".join(parts)


def parse_decision(text: str | None, agents: Sequence[str]) -> RoutingDecision | str:
    """The model's routing decision, or the text to send back to it when it is unusable.

    Accepts bare JSON, JSON inside a ```json fence, or a JSON object within prose. The target
    must name one of `agents` (exactly, or by normalised name).
    """
    if not text or not text.strip():
        return decision_feedback("Your reply was empty", agents)
    try:
        value = _json_object(text)
    except ValueError:
        return decision_feedback("Your reply was not JSON", agents)
    if not isinstance(value, dict):
        return decision_feedback(f"Your reply was JSON but not an object ({type(value).__name__})", agents)
    try:
        out = RoutingDecisionOutput.model_validate(value)
    except ValidationError as err:
        return decision_feedback(f"Your decision is invalid ({_validation_text(err)})", agents)
    target = _resolve_target(out.target, agents)
    if target is None:
        return decision_feedback(f"{out.target!r} is not an agent of this team", agents)
    return RoutingDecision(target=target, strategy="llm-decision", reasoning=out.reasoning,
                           confidence=out.confidence)



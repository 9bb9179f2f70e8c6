"""Building and running workers: the activities' host, its converters, the scripted model, the
dev server.

`build_worker` (also at `durable_teams`) serves teams with a model backend: `OpenAIBackend`
(any OpenAI-compatible endpoint), `ScriptedModel` (scripted answers, no model), a
`ModelRouter` of several, or your own `ModelBackend`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "build_worker": "durable_teams.worker.build",
    "ModelBackend": "durable_teams.activities.model",
    "OpenAIBackend": "durable_teams.activities.model",
    "ModelRouter": "durable_teams.activities.model_router",
    "ScriptedModel": "durable_teams.worker.scripted",
    # a script's replies (docs/scripted-models.md)
    "say": "durable_teams.worker.scripted",
    "call": "durable_teams.worker.scripted",
    "calls": "durable_teams.worker.scripted",
    "when": "durable_teams.worker.scripted",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.activities.model import ModelBackend, OpenAIBackend
    from durable_teams.activities.model_router import ModelRouter
    from durable_teams.worker.build import build_worker
    from durable_teams.worker.scripted import ScriptedModel, call, calls, say, when

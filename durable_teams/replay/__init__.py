"""Replaying recorded conversations against a candidate team, model or prompt (docs/replay.md).

The pure parts (no Temporal server: they test in milliseconds): what a conversation's history
records (`records`, `history_records`), which tool results and answers a replay may reuse
(`tool_book`, `question_book`), how two runs differ (`comparison`) and the reports
(`reports`, `report_page`). The runs themselves: `replay_runner` (an in-process worker on a
task queue of its own, `replay_tools`), `candidate` (the team and model replayed against) and
`replay_sources` (histories from workflow ids, a visibility query or exported files).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "Record": "durable_teams.replay.records",
    "record_of": "durable_teams.replay.history_records",
    "UnreadableHistory": "durable_teams.replay.history_records",
    "record_from_file": "durable_teams.replay.replay_sources",
    "records_of": "durable_teams.replay.replay_sources",
    "Candidate": "durable_teams.replay.candidate",
    "CandidateError": "durable_teams.replay.candidate",
    "AnswerRule": "durable_teams.replay.question_book",
    "ReplaySettings": "durable_teams.replay.replay_runner",
    "replay": "durable_teams.replay.replay_runner",
    "private_server": "durable_teams.replay.replay_runner",
    "ConversationDiff": "durable_teams.replay.comparison",
    "totals": "durable_teams.replay.comparison",
    "parse_fail_on": "durable_teams.replay.comparison",
    "verdict": "durable_teams.replay.comparison",
    "report_markdown": "durable_teams.replay.reports",
    "report_json": "durable_teams.replay.reports",
    "report_html": "durable_teams.replay.report_page",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.replay.candidate import Candidate, CandidateError
    from durable_teams.replay.comparison import ConversationDiff, parse_fail_on, totals, verdict
    from durable_teams.replay.history_records import UnreadableHistory, record_of
    from durable_teams.replay.question_book import AnswerRule
    from durable_teams.replay.records import Record
    from durable_teams.replay.replay_runner import ReplaySettings, private_server, replay
    from durable_teams.replay.replay_sources import record_from_file, records_of
    from durable_teams.replay.report_page import report_html
    from durable_teams.replay.reports import report_json, report_markdown

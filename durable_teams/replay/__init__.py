"""Replaying recorded conversations against a candidate team, model or prompt (docs/replay.md).

The pure parts (no Temporal server: they test in milliseconds): what a conversation's history
records (`records`, `history_records`), which tool results and answers a replay may reuse
(`tool_book`, `question_book`), how two runs differ (`comparison`) and the reports
(`reports`, `report_page`). The runs themselves: `replay_runner` (an in-process worker on a
task queue of its own, `replay_tools`), `candidate` (the team and model replayed against) and
`replay_sources` (histories from workflow ids, a visibility query or exported files).
"""

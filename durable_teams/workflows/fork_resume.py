"""Which carried state a fork may start on (a fork's input is checked like any input: it can
be sent by hand, with `temporal workflow start`).

A fork starts between turns, or (a fork at a checkpoint inside a turn, durable_teams/client/
fork_state.py) in the middle of one turn, resumed where it stood: the same resume a run that
continued as new in the middle of a turn makes (`TurnProgress`, workflows/turns.py). Its resume
point is `state.in_progress`, whose turn must be the first queued (turns sent while it ran
follow it); the questions that turn had open are asked again in the fork. Nothing new runs for other inputs: this only widens what
a fork's input may hold, and forks' recorded histories held none of it.
"""

from __future__ import annotations

from .state import ConversationState


def fork_state_problem(state: ConversationState) -> str | None:
    """Why `state` cannot start a fork, or None."""
    resume = state.in_progress
    if resume is None:
        if state.pending or state.queue:
            return ("workflow input: a fork's 'state' is a conversation between turns, or in one "
                    "turn resumed at 'in_progress': no question pending or turn queued without it")
        return None
    if [number for number, _ in state.queue[:1]] != [resume.turn]:
        return ("workflow input: a fork's 'in_progress' resumes its turn, which must be the first "
                f"turn queued (turn {resume.turn})")
    if resume.agent_run != 0 and resume.agent_run not in state.transcript.runs:
        return f"workflow input: a fork's 'in_progress' names agent run {resume.agent_run}, which its transcript lacks"
    return None

"""The conversation workflow and what a Temporal client sends it and reads from it.

Start and talk to conversations with the Temporal client itself, if you like::

    from durable_teams.workflows import ConversationInput, TeamWorkflow, UserTurn

    handle = await client.start_workflow(
        TeamWorkflow.run, ConversationInput(team_name="faang", single_turn=False),
        id="thread-1", task_queue="durable-teams")
    number = await handle.execute_update(TeamWorkflow.submit_turn, UserTurn(text="Hi"))
    status = await handle.query(TeamWorkflow.status)

The workflow's entry points and their argument and result types: `run` takes a
`ConversationInput` and returns a `ConversationResult`; the update `submit_turn` and the
signal `post_message` take a `UserTurn`; the update `answer` and the signal `human_reply` take a
`HumanReply` (an `AnswerAck` back); the queries `status` (`ConversationStatus`),
`pending_questions` (`Question`s), `transcript` (`Message`s), `turn_replies` (`TurnReply`s) and
`log_page` (`LogPage`); the signal `close`. The modules under this package are its internals
and move as it changes: import these names from here (docs/conversations.md).

Names resolve on first use, so the workflow sandbox, which re-imports this package for every
conversation, loads nothing it does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "TeamWorkflow": "durable_teams.workflows.conversation",
    "ConversationInput": "durable_teams.workflows.state",
    "ConversationResult": "durable_teams.workflows.state",
    "ConversationStatus": "durable_teams.workflows.conversation_reads",
    "UserTurn": "durable_teams.workflows.state",
    "TurnReply": "durable_teams.workflows.state",
    "HumanReply": "durable_teams.workflows.state",
    "AnswerAck": "durable_teams.workflows.state",
    "Question": "durable_teams.workflows.state",
    "LogPage": "durable_teams.workflows.conversation_reads",
    "Message": "durable_teams.workflows.messages",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.workflows.conversation import TeamWorkflow
    from durable_teams.workflows.conversation_reads import ConversationStatus, LogPage
    from durable_teams.workflows.messages import Message
    from durable_teams.workflows.state import (
        AnswerAck,
        ConversationInput,
        ConversationResult,
        HumanReply,
        Question,
        TurnReply,
        UserTurn,
    )

"""Thread marks: how a chat client that resends its history, and names no thread, keeps its
own thread when another chat of the same caller says the very same words.

The first answer a chat thread gives (durable_teams/gateway/core/resent_history.py) ends with its mark,
an HTML comment that markdown chat UIs do not show:

    Your refund is on its way.

    <!-- thread: 3f9a2c71b0de -->

Clients keep an assistant message's content as it came and resend it: the openai client (the
message appended as `choices[0].message`, or its `content`), LangChain's `ChatOpenAI` (the
`AIMessage`), litellm, Open WebUI. The mark holds no spaces that matter: a client that collapses,
trims or removes whitespace, changes case or escapes `<` and `>` as `&lt;` `&gt;` still carries it.
The mark is the random end of the thread's id, so it names a thread only inside the caller's
own family (same token or scope, team, system prompt, `user` and first message): a mark copied
into another caller's chat names nothing there. Marks are stripped from what the team sees.
"""

from __future__ import annotations

import re

from durable_teams.workflows.messages import Message

MARK_CHARS = 12
"""Hex digits of a mark: the random end of a chat thread's id."""
MARK = re.compile(rf"(?:<|&lt;)!--\s*thread\s*:?\s*([0-9a-f]{{{MARK_CHARS}}})\s*--\s*(?:>|&gt;)",
                  re.IGNORECASE)


def mark_of(thread: str) -> str:
    return thread[-MARK_CHARS:]


def mark_line(thread: str) -> str:
    """What an answer ends with to carry `thread`'s mark."""
    return f"\n\n<!-- thread: {mark_of(thread)} -->"


def without_marks(text: str) -> str:
    """`text` with its marks (and the blank line before one) taken out."""
    return MARK.sub("", text).rstrip() if MARK.search(text) else text


def latest_mark(messages: list[Message]) -> str | None:
    """The mark of the latest assistant message that carries one (a thread opened from a
    history answers after the marks of the threads before it), or None."""
    for message in reversed(messages):
        if message.role == "assistant":
            found = MARK.findall(message.content or "")
            if found:
                return str(found[-1]).lower()
    return None


def unmarked(messages: list[Message]) -> list[Message]:
    """The messages as the team should see them: marks taken out of the assistant's."""
    return [m.model_copy(update={"content": without_marks(m.content)})
            if m.role == "assistant" and m.content else m for m in messages]

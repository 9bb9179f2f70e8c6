"""What a chat request resends, read as a conversation, and the keys that tell chats apart.

Chat front ends and client libraries (Open WebUI, LibreChat, LangChain's `ChatOpenAI`, the
openai client as most code uses it) resend the whole conversation on every request and send no
thread id. This module reads such a history (`chat_history`) and derives what identifies it:

- A thread started here for such a client is named after its chat's key (`ChatKey`: the
  caller's token or scope, the team, and the system and developer messages and `user` the
  client sends), its first user message and a random mark (`<team>-chat-<digest>-<mark>`):
  chats that differ in any of these never share a family, and so never a thread.
- `request_keys`: digests of what each request resent, so a thread's latest input says which
  request of which chat it took.

Which running thread a history continues is decided in durable_teams/gateway/core/resent_threads.py.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

from durable_teams.client.approvals import ASK_AGAIN
from durable_teams.client.thread_ids import team_part
from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.requests import FieldError
from durable_teams.gateway.core.thread_marks import MARK_CHARS, without_marks
from durable_teams.workflows.messages import Message

SYSTEM_ROLES = ("system", "developer")
"""A client's system prompt: kept as a system message (`developer` is OpenAI's newer name)."""


@dataclass(frozen=True)
class ChatHistory:
    """A request's messages: the conversation before, and the user's newest message."""

    earlier: list[Message]
    text: str
    names: tuple[str, ...] = ()
    """The messages' `name`s (OpenAI's participant names), as `role:name`, in order."""

    @property
    def first_user_text(self) -> str:
        return next((m.content or "" for m in self.earlier if m.role == "user"), self.text)

    @property
    def user_messages(self) -> int:
        return 1 + sum(m.role == "user" for m in self.earlier)


def part_text(part: Any, at: str) -> str:
    """A content part's text: text parts only (an image part is refused, not dropped)."""
    if not isinstance(part, dict) or part.get("type", "text") != "text":
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        raise FieldError(f"{at}: only text content parts are supported, not {kind!r}", at)
    text = part.get("text")
    if not isinstance(text, str):
        raise FieldError(f"{at}.text must be a string", at)
    return checks.encodable(text, at)


def content_text(message: dict[str, Any], at: str, optional: bool = False) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part_text(p, f"{at}.content[{i}]") for i, p in enumerate(content))
    if isinstance(content, str):
        return checks.encodable(content, f"{at}.content")
    if content is None and optional:
        return ""
    raise FieldError(f"{at}.content must be a string or a list of text parts", f"{at}.content")


def earlier_message(message: Any, at: str) -> Message:
    """One message before the last: the user's, the assistant's, or a system prompt."""
    role = message.get("role") if isinstance(message, dict) else None
    if role in ("tool", "function") or (role == "assistant" and (
            message.get("tool_calls") or message.get("function_call"))):
        raise FieldError(f"{at}: tool calls and tool messages from the client are not supported "
                         "(a team's agents use their own tools)", at)
    if role not in ("user", "assistant") and role not in SYSTEM_ROLES:
        raise FieldError(f"{at}.role must be 'system', 'user' or 'assistant', not {role!r}", f"{at}.role")
    text = content_text(message, at, optional=role == "assistant")
    return Message(role="system" if role in SYSTEM_ROLES else role, content=text)


def chat_history(messages: Any) -> ChatHistory:
    """The request's messages, checked: the last must be the user's (the one answered)."""
    if not isinstance(messages, list) or not messages:
        raise FieldError("'messages' must be a non-empty list", "messages")
    last = messages[-1]
    at = f"messages[{len(messages) - 1}]"
    if not isinstance(last, dict) or last.get("role") != "user":
        role = last.get("role") if isinstance(last, dict) else None
        raise FieldError(f"the last message must be the user's (it is {role!r}): the thread "
                         "answers the user's newest message", at)
    text = content_text(last, at)
    if not text.strip():
        raise FieldError(f"{at} has no text", at)
    if len(text.encode("utf-8")) > checks.MAX_TURN_BYTES:
        raise FieldError(f"{at} is over {checks.MAX_TURN_BYTES:,} bytes", at)
    earlier = [earlier_message(m, f"messages[{i}]") for i, m in enumerate(messages[:-1])]
    return ChatHistory(earlier, text, tuple(participant_names(messages)))


def participant_names(messages: list[Any]) -> list[str]:
    """Each message's `name` (OpenAI's way to tell participants of one role apart), checked:
    part of the chat's key, as the system prompt is."""
    names = []
    for i, message in enumerate(messages):
        name = message.get("name") if isinstance(message, dict) else None
        if name is None or name == "":
            continue
        at = f"messages[{i}].name"
        if not isinstance(name, str) or len(name) > checks.MAX_ID_CHARS:
            raise FieldError(f"{at} must be a string of at most {checks.MAX_ID_CHARS} characters", at)
        names.append(f"{message.get('role')}:{checks.encodable(name, at)}")
    return names


def without_asked_again(history: ChatHistory) -> ChatHistory:
    """The history without the exchanges the thread never took: an unclear answer to an
    approval and the gateway's "Please answer yes or no" after it (the approval stays open,
    so the next clear answer continues the same thread)."""
    earlier: list[Message] = []
    for message in history.earlier:
        asked_again = message.role == "assistant" and (message.content or "").startswith(ASK_AGAIN)
        if asked_again and earlier and earlier[-1].role == "user":
            earlier.pop()  # the unclear answer it asked again after
        elif not asked_again:
            earlier.append(message)
    return history if len(earlier) == len(history.earlier) else ChatHistory(earlier, history.text, history.names)


@dataclass(frozen=True)
class ChatKey:
    """Whose chat a request is, from everything it sends that tells one conversation from
    another besides its messages: the caller's scope (`scope`: its token's digest, or its
    scope name for a scoped token), the team, and `setup`: the system and developer messages,
    participant `name`s and OpenAI's `user` or `safety_identifier` (an empty one is absent);
    "" when there are none, so threads of earlier releases, which had no setup, keep their
    ids. `tenant`: the scope whose threads the caller sees (None: an operator,
    durable_teams/gateway/core/scopes.py)."""

    scope: str
    team: str
    setup: str = ""
    tenant: str | None = None

    def digest(self, *parts: str) -> hashlib._Hash:
        head = f"{self.scope}\0{self.team}" + (f"\0{self.setup}" if self.setup else "")
        return hashlib.sha256("\0".join((head, *parts)).encode())


def chat_key(scope: str, team: str, history: ChatHistory, user: str | None = None,
             tenant: str | None = None) -> ChatKey:
    systems = [flat(m.content or "") for m in history.earlier if m.role == "system"]
    systems = [text for text in systems if text]
    parts: dict[str, Any] = {"system": systems, "user": user or None}
    if history.names:  # only when sent: keys of chats without names stay as they were
        parts["names"] = list(history.names)
    setup = json.dumps(parts) if systems or user or history.names else ""
    return ChatKey(scope, team, setup, tenant)


def family(key: ChatKey, first_user_text: str) -> str:
    """The id prefix of the threads of this caller and setup whose chat opened with
    `first_user_text`."""
    return f"{team_part(key.team)}-chat-{key.digest(flat(first_user_text)).hexdigest()[:24]}-"


def new_thread_id(key: ChatKey, history: ChatHistory, seed: str | None = None) -> str:
    """A new thread's id in the chat's family: its mark random, or derived from `seed` (what
    makes a request the same one: its Idempotency-Key, or the mark its history carries, with
    its digest), so the same request sent again names the same new thread, never a second."""
    end = hashlib.sha256(seed.encode()).hexdigest() if seed else uuid.uuid4().hex
    return family(key, history.first_user_text) + end[:MARK_CHARS]


def flat(text: str) -> str:
    """Whitespace collapsed: clients trim and re-wrap what they resend."""
    return " ".join(text.split())


def continues(said: str, head: str) -> bool:
    """Whether the assistant message a client resends is the thread's latest answer: the same
    words, or ending with them after a whole word (a stream may have carried earlier text of
    the turn before it; "14" does not end with the answer "4"). Thread marks are not words."""
    said, head = flat(without_marks(said)), flat(head)
    return bool(head) and (said == head or said.endswith(" " + head))


KEY_PREFIX = "chat2-"
"""Input ids the gateway gives chat requests (`ConversationStatus.last_input_id`)."""


@dataclass(frozen=True)
class RequestKeys:
    """Ids of a history-resending request and of the one before it in the same chat: digests
    of the chat's key and the user's and assistant's messages as resent (thread marks left
    out). A thread whose latest input is `previous` is where this chat left off; one whose
    latest input is `this` already took this very request (a retry)."""

    this: str
    previous: str | None


def request_keys(key: ChatKey, history: ChatHistory) -> RequestKeys:
    running = key.digest()
    previous: str | None = None
    spoken = [m for m in history.earlier if m.role in ("user", "assistant")]
    for n, message in enumerate(spoken):
        running.update(f"\0{message.role}\0{flat(without_marks(message.content or ''))}".encode())
        if message.role == "user" and n == len(spoken) - 2 and spoken[-1].role == "assistant":
            previous = KEY_PREFIX + running.hexdigest()[:32]
    running.update(f"\0user\0{flat(history.text)}".encode())
    return RequestKeys(KEY_PREFIX + running.hexdigest()[:32], previous)

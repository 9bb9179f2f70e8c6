"""A team's live text (durable_teams/live/hub.py's deltas) as the text a client shows: the chat
door's chunk deltas and the Responses door's text deltas write it the same way."""

from __future__ import annotations

from dataclasses import dataclass

from durable_teams.live.hub import Delta


@dataclass
class ContentStream:
    """Live deltas as chunk deltas. Text of the shared conversation is `content`; a
    supervisor's worker's own text is `reasoning_content` (shown as the model's thinking by
    chat UIs that read it, ignored by others). A new call's text starts a new paragraph. Sent
    text cannot be taken back, so `finish` makes the content end with the reply whatever
    happened (a call retried, text written beside a tool call)."""

    sent: bool = False
    call: str | None = None
    current: str = ""
    """Content of the latest call since its last reset."""
    broken: bool = False
    thinking: str | None = None

    def take(self, delta: Delta) -> dict[str, str]:
        if not delta.shared:
            lead = "\n\n" if self.thinking not in (None, delta.call) else ""
            self.thinking = delta.call
            return {"reasoning_content": lead + delta.text} if delta.text else {}
        if delta.reset:
            self.current, self.broken = "", self.broken or (delta.call == self.call and self.sent)
            return {}
        lead = ""
        if delta.call != self.call or self.broken:
            lead = "\n\n" if self.sent else ""
            self.call, self.current, self.broken = delta.call, "", False
        self.current += delta.text
        self.sent = self.sent or bool(delta.text)
        return {"content": lead + delta.text} if lead + delta.text else {}

    def finish(self, answer: str) -> str:
        """What to send after the deltas so the content ends with `answer`."""
        if self.current and answer.startswith(self.current):
            return answer[len(self.current):]
        return ("\n\n" if self.sent else "") + answer

"""A response's object and its stream of events, as OpenAI's Responses API shapes them, from a
`View` (durable_teams/gateway/doors/responses/from_log.py). Pure: the same view gives the same events,
numbered by their place in the list, so `starting_after=N` resumes a stream in any process.

The events of a response, in order (`sequence_number` is the index in this list):

- `response.created`, `response.in_progress` (the response as it started: no output yet);
- per step of the team (a message of an agent calling tools, handoffs included), a
  `reasoning` item: `response.output_item.added` and `response.output_item.done`;
- once it ended: the answer (or the question) as a `message` item, its text in one
  `response.output_text.delta` (the log holds whole messages), with `content_part` and
  `output_item` events around it; an approval adds its `mcp_approval_request` item;
- last, `response.completed`, `response.incomplete` or `response.failed` with the whole response.

With live deltas (`live`: a gateway whose deltas cross processes,
live.py), the `message` item opens first, at output index 0, right after
`response.in_progress` (`output_item.added`, `content_part.added`), so a client can show live
text in it while the team works; the reasoning items follow it, and it closes once the
response ended (with no text for a failed one, status `incomplete`).
"""

from __future__ import annotations

from typing import Any

from durable_teams.gateway.doors.responses.from_log import ResponseRef, UnknownResponse, View
from durable_teams.workflows.usage import Tally

FINAL_EVENT = {"completed": "response.completed", "incomplete": "response.incomplete",
               "failed": "response.failed", "cancelled": "response.failed"}
INCOMPLETE = {"truncated": "max_output_tokens", "filtered": "content_filter"}


def usage_of(tally: Tally) -> dict[str, Any]:
    return {"input_tokens": tally.input_tokens, "output_tokens": tally.output_tokens,
            "total_tokens": tally.total_tokens, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}


def reasoning_item(view: View, index: int, text: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{item_suffix(view.ref)}_{index}",
            "summary": [{"type": "summary_text", "text": text}], "status": "completed"}


def item_suffix(ref: ResponseRef) -> str:
    """What makes an item's id unique across threads: its response's own id, less `resp_`."""
    return ref.id[len("resp_"):]


def message_id(ref: ResponseRef) -> str:
    return f"msg_{item_suffix(ref)}"


def response_of_item(item_id: object) -> ResponseRef | None:
    """The response whose message item `item_id` is (None: not one of ours)."""
    if not isinstance(item_id, str) or not item_id.startswith("msg_"):
        return None
    try:
        return ResponseRef.parse("resp_" + item_id[len("msg_"):])
    except UnknownResponse:
        return None


def message_item(view: View, text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": message_id(view.ref), "role": "assistant", "status": status,
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def opened_message(view: View, live: bool) -> dict[str, Any] | None:
    """The message item as the live layout has it at output index 0 (None: no live layout)."""
    if not live:
        return None
    if not view.ended:
        return {**message_item(view, ""), "status": "in_progress", "content": []}
    if view.status == "failed" or view.text is None:
        return message_item(view, "", "incomplete")
    return message_item(view, view.text)


def approval_item(view: View, team: str) -> dict[str, Any] | None:
    stop = view.stop
    if stop is None or not stop.approval:
        return None
    return {"type": "mcp_approval_request", "id": approval_id(stop.call.id), "name": stop.call.name,
            "arguments": stop.call.arguments, "server_label": team}


def approval_id(call_id: str) -> str:
    """The `approval_request_id` of the approval of tool call `call_id` (stable: from the log)."""
    return f"mcpr_{call_id}"


def output_items(view: View, team: str, live: bool = False) -> list[dict[str, Any]]:
    opened = opened_message(view, live)
    items = ([opened] if opened else []) + [reasoning_item(view, i, text) for i, text in view.steps]
    if not live and view.ended and view.status != "failed" and view.text is not None:
        items.append(message_item(view, view.text))
    approval = approval_item(view, team) if view.ended else None
    return items + ([approval] if approval else [])


def response_object(view: View, team: str, created_at: int, *, started: bool = False,
                    background: bool = False, live: bool = False, store: bool = True) -> dict[str, Any]:
    """The response as `GET /v1/responses/{id}` gives it; `started`: as it was when it began;
    `store`: as the request that made it said (its thread keeps it either way)."""
    status = "in_progress" if started else view.status
    failed = status == "failed"
    reply = view.reply
    return {
        "id": view.ref.id, "object": "response", "created_at": created_at, "status": status,
        "model": team, "output": [] if started else output_items(view, team, live),
        "usage": usage_of(Tally() if started else view.usage),
        "error": {"code": "server_error", "message": view.text or ""} if failed else None,
        "incomplete_details": {"reason": INCOMPLETE.get(reply.status if reply else "", "max_output_tokens")}
        if status == "incomplete" else None,
        "background": background, "instructions": None, "metadata": {}, "parallel_tool_calls": False,
        "previous_response_id": None, "store": store, "temperature": None, "top_p": None,
        "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
        "truncation": "disabled", "max_output_tokens": None,
    }


def events(view: View, team: str, created_at: int, background: bool = False,
           live: bool = False) -> list[dict[str, Any]]:
    """Every event of the response so far, in order; a prefix of the final list while it runs.
    `live`: the live layout (the message item opened first, see above)."""
    first = response_object(view, team, created_at, started=True, background=background, live=live)
    out: list[dict[str, Any]] = [{"type": "response.created", "response": first},
                                 {"type": "response.in_progress", "response": first}]
    base = 1 if live else 0
    if live:
        out.extend(message_events(view, 0, "")[:2])  # output_item.added, content_part.added
    for position, (index, text) in enumerate(view.steps, start=base):
        item = reasoning_item(view, index, text)
        out.append({"type": "response.output_item.added", "output_index": position,
                    "item": {**item, "status": "in_progress"}})
        out.append({"type": "response.output_item.done", "output_index": position, "item": item})
    if not view.ended:
        return out
    position = base + len(view.steps)
    if live:
        closed = opened_message(view, live)
        assert closed is not None
        out.extend(message_events(view, 0, closed["content"][0]["text"], closed["status"])[2:])
    elif view.status != "failed" and view.text is not None:
        out.extend(message_events(view, position, view.text))
        position += 1
    approval = approval_item(view, team)
    if approval is not None:
        out.append({"type": "response.output_item.added", "output_index": position, "item": approval})
        out.append({"type": "response.output_item.done", "output_index": position, "item": approval})
    whole = response_object(view, team, created_at, background=background, live=live)
    out.append({"type": FINAL_EVENT[view.status], "response": whole})
    return out


def message_events(view: View, position: int, text: str, status: str = "completed") -> list[dict[str, Any]]:
    """The message item's events: added, part added, the text in one delta, text done, part
    done, item done."""
    item = message_item(view, text, status)
    part = item["content"][0]
    at = {"item_id": item["id"], "output_index": position, "content_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": position,
         "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": part},
        {"type": "response.output_item.done", "output_index": position, "item": item},
    ]


def numbered(all_events: list[dict[str, Any]], after: int) -> list[dict[str, Any]]:
    """The events after sequence number `after` (-1: all), each with its `sequence_number`."""
    return [{**event, "sequence_number": n} for n, event in enumerate(all_events) if n > after]

"""A tool writes custom stream data with `get_stream_writer()` (LangGraph's name): refused
outside a tool run, refused when not JSON or too big, and nothing refused is kept."""

from __future__ import annotations

import pytest

from durable_teams import get_stream_writer
from durable_teams.teams import StreamWriteError
from durable_teams.teams.stream_writer import MAX_STREAM_WRITE_BYTES, STREAM_WRITES, StreamWrites

pytestmark = pytest.mark.pure


def test_outside_a_tool_run_there_is_no_writer() -> None:
    with pytest.raises(RuntimeError, match=r"get_stream_writer\(\) is called outside a tool run"):
        get_stream_writer()


def test_a_write_that_is_not_json_or_too_big_is_refused_and_not_kept() -> None:
    writes = StreamWrites("crunch")
    token = STREAM_WRITES.set(writes)
    try:
        writer = get_stream_writer()
        writer({"progress": 1})
        with pytest.raises(StreamWriteError, match="crunch wrote stream data JSON cannot encode"):
            writer({"when": object()})
        with pytest.raises(StreamWriteError, match="JSON cannot encode"):
            writer(float("nan"))
        with pytest.raises(StreamWriteError, match=f"over the {MAX_STREAM_WRITE_BYTES:,}-byte limit"):
            writer("x" * MAX_STREAM_WRITE_BYTES)
        writer(["ok", 2])
    finally:
        STREAM_WRITES.reset(token)
    assert writes.items == [{"progress": 1}, ["ok", 2]]
    with pytest.raises(RuntimeError, match="outside a tool run"):
        get_stream_writer()


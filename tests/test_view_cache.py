"""The model activity's per-worker view cache: a view rebuilt from cached log prefixes plus the
`model_view_delta` query's delta must equal the full view (`Transcript.view`), always."""

from __future__ import annotations

import asyncio
import random

import pytest
from temporalio.client import WorkflowQueryFailedError

from durable_teams.activities.view_cache import ViewCache
from durable_teams.workflows.handoff import HandoffView, handoff_back_messages, handoff_message
from durable_teams.workflows.messages import Message, ModelRequest, ModelView, ToolCall, ToolSpec
from durable_teams.workflows.transcript import LogDelta, Transcript, merge_delta

pytestmark = pytest.mark.pure

TOOLS = {"supervisor": [ToolSpec(name="transfer_to_math")], "math": [ToolSpec(name="add")]}


def ai(name: str, content: str = "", calls: list[ToolCall] | None = None, agent_run: int = 0) -> Message:
    return Message(role="assistant", name=name, content=content, tool_calls=calls or [], agent_run=agent_run)


def tool(call: ToolCall, content: str, agent_run: int = 0) -> Message:
    return Message(role="tool", name=call.name, content=content, tool_call_id=call.id, agent_run=agent_run)


def conversation(output_mode: str) -> list[Transcript]:
    """Snapshots (deep copies) of a supervised conversation after every change: a user turn,
    parallel handoffs to two runs of `math`, tool loops, runs folded back, a second turn."""
    t, snaps = Transcript(), []

    def snap() -> None:
        snaps.append(t.model_copy(deep=True))

    t.append(Message(role="user", content="what is 1+2 and 3+4?"))
    snap()
    h1, h2 = ToolCall(id="h1", name="transfer_to_math"), ToolCall(id="h2", name="transfer_to_math")
    t.append(ai("supervisor", calls=[h1, h2]))
    t.append(handoff_message("math", h1))
    t.append(handoff_message("math", h2))
    runs = [t.start_run("math", h1.id), t.start_run("math", h2.id)]
    snap()
    for step in range(3):
        for run in runs:
            add = ToolCall(id=f"a{run.id}{step}", name="add", arguments='{"a": 1}')
            t.append(ai("math", calls=[add], agent_run=run.id))
            snap()
            t.append(tool(add, f"{run.id}.{step}", agent_run=run.id))
            snap()
    for run in runs:
        t.append(ai("math", f"answer {run.id}", agent_run=run.id))
        t.finish_run(run.id, output_mode)  # type: ignore[arg-type]
        for m in handoff_back_messages("math", "supervisor", f"back_{run.id}"):
            t.append(m)
        snap()
    t.append(ai("supervisor", "3 and 7"))
    t.append(Message(role="user", content="and 5+5?"))
    snap()
    return snaps


def request(agent_run: int, upto: int, run_id: str = "r1", agent: str = "supervisor") -> ModelRequest:
    return ModelRequest(workflow_id="wf", run_id=run_id, agent=agent, model="m", agent_run=agent_run,
                        transcript_length=upto)


def wire(delta: LogDelta) -> LogDelta:
    """As the query delivers it: serialised and parsed again (new objects)."""
    return LogDelta.model_validate_json(delta.model_dump_json())


def view_from_delta(log: list[Message], shared: list[int], delta: LogDelta, agent_run: int,
                    upto: int) -> list[Message]:
    """Merge `delta` and build the view from scratch, as `Transcript.view` would."""
    shared_end, handoffs = merge_delta(log, shared, delta, upto)
    return Transcript.of(log[:upto], shared[:shared_end], dict(delta.runs)).view(agent_run, upto, handoffs)


@pytest.mark.parametrize("output_mode", ["last_message", "full_history"])
@pytest.mark.parametrize("show", ["own", "all", "none"])
def test_views_from_deltas_equal_full_views_at_every_point(output_mode: str, show: HandoffView) -> None:
    log: list[Message] = []
    shared: list[int] = []
    for t in conversation(output_mode):
        for agent_run in [0, *t.runs]:
            for upto in sorted({1, len(t.log) // 2, len(t.log) - 1, len(t.log)} - {0}):
                delta = wire(t.delta(len(log), len(shared), upto, handoffs=show))
                got = view_from_delta(log, shared, delta, agent_run, upto)
                assert got == t.view(agent_run, upto, handoffs=show)
                # a reader starting from nothing gets the same
                fresh = view_from_delta([], [], wire(t.delta(0, 0, upto, show)), agent_run, upto)
                assert fresh == got
    assert log == conversation(output_mode)[-1].log


def test_delta_carries_only_what_the_reader_lacks() -> None:
    t = conversation("last_message")[-1]
    delta = t.delta(5, 3, len(t.log))
    assert delta.messages == t.log[5:] and delta.shared == t.shared[3:]
    assert t.delta(len(t.log), len(t.shared), len(t.log)).messages == []
    assert t.delta(len(t.log), 0, 4).messages == []  # reader already past `upto`
    # a reader claiming more than the log holds is sent everything from 0
    reset = t.delta(len(t.log) + 3, 0, len(t.log))
    assert reset.log_start == 0 and reset.messages == t.log


def test_a_delta_past_the_readers_prefix_is_refused() -> None:
    t = conversation("last_message")[-1]
    with pytest.raises(ValueError):
        view_from_delta([], [], t.delta(2, 0, len(t.log)), 0, len(t.log))


class FakeWorkflows:
    """Workflows by (id, run id), answering the two queries as `TeamWorkflow` does."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], Transcript] = {}
        self.delta_calls: list[tuple[int, int, bool]] = []
        self.full_calls = 0
        self.shuffle = random.Random(7)

    async def delta(self, req: ModelRequest, log_start: int, shared_start: int, with_tools: bool) -> LogDelta:
        self.delta_calls.append((log_start, shared_start, with_tools))
        t = self.runs[(req.workflow_id, req.run_id)]
        out = wire(t.delta(log_start, shared_start, req.transcript_length,
                           tools=TOOLS[req.agent] if with_tools else None))
        for _ in range(self.shuffle.randrange(3)):  # let concurrent readers interleave
            await asyncio.sleep(0)
        return out

    async def full(self, req: ModelRequest) -> ModelView:
        self.full_calls += 1
        t = self.runs[(req.workflow_id, req.run_id)]
        return ModelView(messages=t.view(req.agent_run, req.transcript_length), tools=TOOLS[req.agent])


async def test_cache_reads_deltas_and_matches_the_full_view_across_appends_and_runs() -> None:
    fake = FakeWorkflows()
    cache = ViewCache(delta_reader=fake.delta)
    snaps = conversation("last_message")
    for t in snaps:
        fake.runs[("wf", "r1")] = t
        for agent_run in [0, *t.runs]:
            agent = "supervisor" if agent_run == 0 else "math"
            view = await cache.read(request(agent_run, len(t.log), agent=agent))
            assert view == await fake.full(request(agent_run, len(t.log), agent=agent))
    # after the first read, each read asked only for what was new, and tools once per agent
    assert fake.delta_calls[0] == (0, 0, True)
    assert sum(1 for *_, tools in fake.delta_calls if tools) == 2
    assert all(start <= len(snaps[-1].log) for start, _, _ in fake.delta_calls)
    assert cache.misses == 1 and len(cache) == 1

    # a retry of an old call (smaller transcript_length) sees the view as of then
    t = snaps[-1]
    old = request(1, 6, agent="math")
    assert await cache.read(old) == ModelView(messages=t.view(1, 6), tools=TOOLS["math"])

    # continue-as-new: the same log in a new run id is a miss, read from 0
    fake.runs[("wf", "r2")] = t.model_copy(deep=True)
    before = len(fake.delta_calls)
    view = await cache.read(request(0, len(t.log), run_id="r2"))
    assert view.messages == t.view(0, len(t.log))
    assert fake.delta_calls[before] == (0, 0, True)
    assert cache.misses == 2


async def test_a_restarted_worker_starts_from_zero() -> None:
    fake = FakeWorkflows()
    t = conversation("full_history")[-1]
    fake.runs[("wf", "r1")] = t
    first = ViewCache(delta_reader=fake.delta)
    await first.read(request(0, 5))
    restarted = ViewCache(delta_reader=fake.delta)
    view = await restarted.read(request(0, len(t.log)))
    assert view.messages == t.view(0, len(t.log)) and fake.delta_calls[-1][:2] == (0, 0)


async def test_concurrent_reads_of_one_conversation_merge_in_any_order() -> None:
    fake = FakeWorkflows()
    cache = ViewCache(delta_reader=fake.delta)
    snaps = conversation("last_message")
    for t in snaps:
        fake.runs[("wf", "r1")] = t
        reqs = [request(v, upto, agent="supervisor" if v == 0 else "math")
                for v in [0, *t.runs] for upto in {1, len(t.log) // 2 or 1, len(t.log)}]
        views = await asyncio.gather(*(cache.read(r) for r in reqs))
        for r, view in zip(reqs, views, strict=True):
            assert view.messages == t.view(r.agent_run, r.transcript_length)


async def test_a_workflow_that_lost_its_log_resets_the_entry() -> None:
    fake = FakeWorkflows()
    cache = ViewCache(delta_reader=fake.delta)
    long = conversation("last_message")[-1]
    fake.runs[("wf", "r1")] = long
    await cache.read(request(0, len(long.log)))
    short = Transcript()
    short.append(Message(role="user", content="fresh"))
    fake.runs[("wf", "r1")] = short  # cannot happen within a run today; must not give stale views
    view = await cache.read(request(0, 1))
    assert view == ModelView(messages=short.view(0, 1), tools=TOOLS["supervisor"])
    assert fake.delta_calls[-1][2] is False  # tools were cached, and survive the reset


async def test_cache_is_bounded_least_recently_used_first() -> None:
    fake = FakeWorkflows()
    t = conversation("last_message")[-1]
    for i in range(5):
        fake.runs[(f"wf{i}", "r1")] = t
    cache = ViewCache(max_conversations=3, delta_reader=fake.delta)

    def req(i: int) -> ModelRequest:
        return request(0, len(t.log)).model_copy(update={"workflow_id": f"wf{i}"})

    for i in range(5):
        await cache.read(req(i))
    assert len(cache) == 3
    await cache.read(req(0))  # evicted: a miss, read from 0, still right
    assert cache.misses == 6 and fake.delta_calls[-1][:2] == (0, 0)
    by_bytes = ViewCache(max_bytes=1, delta_reader=fake.delta)
    view = await by_bytes.read(req(1))
    assert view.messages == t.view(0, len(t.log)) and len(by_bytes) == 0 and by_bytes.bytes == 0


async def test_a_failing_query_fails_the_read() -> None:
    async def failing(req: ModelRequest, a: int, b: int, c: bool) -> LogDelta:
        raise WorkflowQueryFailedError("some other failure")

    with pytest.raises(WorkflowQueryFailedError):
        await ViewCache(delta_reader=failing).read(request(0, 1))

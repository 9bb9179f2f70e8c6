"""Live deltas across processes over Redis pub/sub (extra `live`: `pip install
'durable-teams[live]'`), for deployments where workers and gateways are separate processes.

    DURABLE_TEAMS_LIVE_URL=redis://redis:6379/0   # on every worker, gateway and `follow`

Each conversation has a channel (`durable-teams:live:<workflow id>`). A worker coalesces:
deltas published while a send is in flight go together in the next one (one PUBLISH per
conversation per round trip), so a fast model costs a few messages a second, not one per token,
and nothing waits on a timer. Pub/sub keeps nothing: a subscriber gets what is published while
it listens, which is what a live view needs (the log is the record). A worker's `Logged`
announcements (a conversation's new log messages) go on the same channel in messages of their
own (first byte `L`), which readers of deltas alone, and earlier releases, skip. When the client's payload
codec encrypts (DURABLE_TEAMS_ENCRYPTION_KEY), deltas are encrypted with it on the broker too.
A broker that is down costs the live view, never a model call: the failure is logged (once per
outage) and the deltas are dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from temporalio.api.common.v1 import Payload

from durable_teams.encryption.codec import EncryptionCodec
from durable_teams.encryption.redact import mask_url
from durable_teams.live.hub import QUEUE_LIMIT, Delta, Live, LiveHub, LiveHubError, Logged, deliver

log = logging.getLogger(__name__)

CHANNEL_PREFIX = "durable-teams:live:"
FLUSH_SECONDS = 1.0
"""How long a finishing model call waits for its last deltas to leave (never longer)."""
PLAIN, SEALED, LOGGED = b"J", b"E", b"L"
"""First byte of a message: JSON deltas, or a Payload encrypted by the codec; `L` before either:
`Logged` announcements instead of deltas."""


class RedisHub(LiveHub):
    """Deltas on Redis pub/sub; `codec` (an EncryptionCodec) seals them."""

    def __init__(self, url: str, codec: Any = None) -> None:
        try:
            import redis.asyncio as redis
        except ImportError:
            raise LiveHubError("DURABLE_TEAMS_LIVE_URL needs the Redis client: "
                               "pip install 'durable-teams[live]'") from None
        self.where = mask_url(url)
        try:
            self.redis = redis.from_url(url)
        except ValueError as err:  # not redis://, rediss:// or unix://
            raise LiveHubError(f"DURABLE_TEAMS_LIVE_URL={self.where} is not a Redis URL: {err}") from None
        self.codec = codec if isinstance(codec, EncryptionCodec) else None
        self._outbox: dict[str, list[Live]] = {}
        self._sending: asyncio.Task[None] | None = None
        self._warned = False

    def __repr__(self) -> str:  # never the URL's password
        return f"RedisHub({self.where!r})"

    @staticmethod
    def channel(workflow_id: str) -> str:
        return CHANNEL_PREFIX + workflow_id

    def publish(self, delta: Live) -> None:
        self._outbox.setdefault(delta.workflow_id, []).append(delta)
        if self._sending is None or self._sending.done():
            self._sending = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while self._outbox:
            batch, self._outbox = self._outbox, {}
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for workflow_id, items in batch.items():
                        deltas = [d for d in items if isinstance(d, Delta)]
                        logged = [d for d in items if isinstance(d, Logged)]
                        if deltas:
                            pipe.publish(self.channel(workflow_id), await self.encode(deltas))
                        if logged:
                            pipe.publish(self.channel(workflow_id), LOGGED + await self.encode(logged))
                    await pipe.execute()
                self._warned = False  # working again: the next outage is told too
            except Exception as err:  # noqa: BLE001 - the live view is best effort
                self._warn(f"live deltas not sent to {self.where}: {type(err).__name__}: {err}")

    async def flush(self) -> None:
        sending = self._sending
        if sending is not None and not sending.done():
            try:
                await asyncio.wait_for(asyncio.shield(sending), FLUSH_SECONDS)
            except TimeoutError:
                self._warn(f"live deltas still unsent to {self.where} after {FLUSH_SECONDS} s")

    def subscribe(self, workflow_id: str) -> AbstractAsyncContextManager[asyncio.Queue[Delta]]:
        return self._listening(workflow_id, steps=False)

    def subscribe_steps(self, workflow_id: str) -> AbstractAsyncContextManager[asyncio.Queue[Live]]:
        return self._listening(workflow_id, steps=True)

    @asynccontextmanager
    async def _listening(self, workflow_id: str, steps: bool) -> AsyncIterator[asyncio.Queue[Any]]:
        queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_LIMIT)
        pubsub = self.redis.pubsub()
        reader: asyncio.Task[None] | None = None
        try:
            await pubsub.subscribe(self.channel(workflow_id))
            # Wait for Redis to confirm: what is published from now on reaches this queue.
            await asyncio.wait_for(self._confirmed(pubsub), 10)
            reader = asyncio.get_running_loop().create_task(self._read(pubsub, queue, steps))
            self._warned = False
        except Exception as err:  # noqa: BLE001 - without the broker, no live view: the log still comes
            self._warn(f"no live deltas from {self.where}: {type(err).__name__}: {err}")
        try:
            yield queue
        finally:
            if reader is not None:
                reader.cancel()
            try:
                await pubsub.aclose()
            except Exception:  # noqa: BLE001, S110 - closing a broken connection
                pass

    @staticmethod
    async def _confirmed(pubsub: Any) -> None:
        while True:
            message = await pubsub.get_message(timeout=1.0)
            if message is not None and message.get("type") == "subscribe":
                return

    async def _read(self, pubsub: Any, queue: asyncio.Queue[Any], steps: bool) -> None:
        try:
            async for message in pubsub.listen():
                if message.get("type") == "message" and (steps or message["data"][:1] != LOGGED):
                    for delta in await self.decode(message["data"]):
                        deliver((queue,), delta)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001
            self._warn(f"live deltas from {self.where} stopped: {type(err).__name__}: {err}")

    async def encode(self, deltas: list[Delta] | list[Logged]) -> bytes:
        data = json.dumps([dataclasses.asdict(d) for d in deltas], separators=(",", ":")).encode()
        if self.codec is None:
            return PLAIN + data
        sealed = await self.codec.encode([Payload(metadata={"encoding": b"json/plain"}, data=data)])
        return SEALED + sealed[0].SerializeToString()

    async def decode(self, raw: bytes) -> list[Live]:
        shape: type[Delta] | type[Logged] = Delta
        if raw[:1] == LOGGED:
            shape, raw = Logged, raw[1:]
        kind, body = raw[:1], raw[1:]
        try:
            if kind == SEALED:
                if self.codec is None:
                    self._warn("live deltas are encrypted: set DURABLE_TEAMS_ENCRYPTION_KEY to read them")
                    return []
                body = (await self.codec.decode([Payload.FromString(body)]))[0].data
            elif kind != PLAIN:
                return []
            return [shape(**item) for item in json.loads(body)]
        except Exception as err:  # noqa: BLE001 - a message this reader cannot read is skipped
            self._warn(f"a live message could not be read: {type(err).__name__}: {err}")
            return []

    def _warn(self, text: str) -> None:
        """Said once per outage (a broker that is down would otherwise log every delta)."""
        if not self._warned:
            self._warned = True
            log.warning("%s (further live-delta problems are not logged)", text)

"""Slow senders cannot hold the gateway's connections: a client that dribbles a request's
headers (each byte resetting uvicorn's idle timer) gets a 408 and is closed once the header
deadline passes, on a fresh connection and on a kept-alive one; a prompt client is unaffected."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest
from temporalio.client import Client

from .gateway_helpers import running_gateway

pytestmark = pytest.mark.workflow

HEADER_TIMEOUT = 0.5


async def _dribble_headers(url: str, prefix: bytes = b"") -> tuple[bytes, float]:
    """Send `prefix`, then one header line every 0.1 s for far longer than the deadline.
    Returns what the server answered to the dribbled request and how long it took."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    loop = asyncio.get_running_loop()
    try:
        writer.write(prefix)
        await writer.drain()
        if prefix:  # read the prompt request's whole response before dribbling the next one
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            await reader.readexactly(length)
        started = loop.time()
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for i in range(100):  # 10 s of dribbling, unless the server closes first
            if reader.at_eof():
                break
            try:
                writer.write(b"X-Slow-%d: x\r\n" % i)
                await writer.drain()
            except ConnectionError:
                break
            try:
                chunk = await asyncio.wait_for(reader.read(65536), 0.1)
            except TimeoutError:
                continue
            answer = chunk + await reader.read()
            return answer, loop.time() - started
        return b"", loop.time() - started
    finally:
        writer.close()


@pytest.mark.slow  # over a second: out of the quick loop
async def test_dribbled_headers_get_408_and_the_connection_closes(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, header_timeout=HEADER_TIMEOUT) as url:
        fresh, fresh_took = await _dribble_headers(url)
        prompt = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        kept, kept_took = await _dribble_headers(url, prefix=prompt)

    for answer, took in ((fresh, fresh_took), (kept, kept_took)):
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert b'"type": "request_timeout"' in answer
        assert HEADER_TIMEOUT * 0.8 <= took < HEADER_TIMEOUT + 3, took


@pytest.mark.slow  # over a second: out of the quick loop
async def test_a_prompt_client_keeps_its_connection_past_the_header_deadline(client: Client, task_queue: str) -> None:
    async with running_gateway(client, task_queue, header_timeout=HEADER_TIMEOUT) as url:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        statuses = []
        for _ in range(3):  # three requests on one connection, spread past the header deadline
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            statuses.append(head.split(b"\r\n")[0])
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            await reader.readexactly(length)
            await asyncio.sleep(HEADER_TIMEOUT * 0.6)  # idle, not sending: the keep-alive timer's case
        writer.close()
    assert statuses == [b"HTTP/1.1 200 OK"] * 3

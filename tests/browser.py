"""The system's Chromium for browser tests (skipped, or failed in CI, when it is missing) and
reading a rendered page."""

from __future__ import annotations

import shutil
import time
import urllib.request
from typing import Any

from .conftest import system_program_missing
from .waiting import until_sync


def chromium_or_skip() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        browser = None
    if browser is None:
        system_program_missing("needs the system's chromium (apt-get install chromium) and playwright (pip)",
                               "DURABLE_TEAMS_REQUIRE_BROWSER")
    return browser


def wait_for_http(url: str, within: float = 60.0) -> None:
    def get() -> bool:
        with urllib.request.urlopen(url, timeout=5):  # noqa: S310 - loopback
            return True
    until_sync(get, f"{url} answering", within=within, retry=(OSError,))


async def text_of_all_frames(page: Any, expected: list[str], within: float = 60.0) -> str:
    """The page's text with its frames' (the UI renders summaries, as markdown, in a frame),
    once every `expected` text is there; what is there after `within` seconds otherwise."""
    deadline = time.monotonic() + within
    while True:
        texts = []
        for frame in page.frames:
            try:
                texts.append(await frame.inner_text("body", timeout=5_000))
            except Exception:  # noqa: BLE001 - a frame that is gone or still empty
                continue
        text = "\n".join(texts).replace("\u2019", "'")  # markdown's typographic apostrophe
        if all(e in text for e in expected) or time.monotonic() > deadline:
            return text
        await page.wait_for_timeout(500)

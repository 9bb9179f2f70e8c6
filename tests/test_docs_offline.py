"""The docs site draws its Mermaid charts offline: the built pages load the site's own copy of
mermaid.js (mkdocs-material fetches one from a CDN otherwise), and in a browser with every
request outside the site refused, the team graph on the "Teams and tools" page becomes a
drawing, not raw code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .browser import chromium_or_skip
from .doc_pages import ROOT

pytestmark = [pytest.mark.pure, pytest.mark.slow]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_every_page_loads_scripts_from_the_site_only(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        sources = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page.read_text("utf-8"))
        assert sources and not [s for s in sources if re.match(r"^(https?:)?//", s)], (page, sources)
        assert any(s.endswith("assets/javascripts/mermaid.min.js") for s in sources), page
    assert (site / "assets" / "javascripts" / "mermaid.min.js").stat().st_size > 1_000_000


async def test_the_team_graph_is_drawn_with_no_network(site: Path) -> None:
    browser_path = chromium_or_skip()
    from playwright.async_api import Route, async_playwright

    refused: list[str] = []

    async def local_only(route: Route) -> None:
        if route.request.url.startswith("file://"):
            await route.continue_()
        else:
            refused.append(route.request.url)
            await route.abort()

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=browser_path, headless=True, args=["--no-sandbox"])
        try:
            page = await chromium.new_page()
            await page.route("**/*", local_only)
            await page.goto((site / "teams-and-tools" / "index.html").as_uri())
            # material draws each chart into a closed shadow root of a div that replaces the
            # code block: a drawn chart has the drawing's size, raw code stays a <pre>
            drawn = page.locator("div.mermaid").first
            await page.wait_for_function(
                "() => [...document.querySelectorAll('div.mermaid')].some(d => d.getBoundingClientRect().height > 100)",
                timeout=60_000)
            height = (await drawn.bounding_box() or {"height": 0})["height"]
            raw = await page.locator("pre.mermaid").count()
        finally:
            await chromium.close()
    assert height > 100 and raw == 0, (height, raw)
    assert not [u for u in refused if "mermaid" in u], refused

"""Page weight and time to first render of the dashboard's agent view with N memories.

    python benchmarks/bench_ui.py [--count 10000] [--db URL] [--runs 5] [--json OUT]

Fills one agent with ``--count`` memories (batched writes through the real service and model;
a fresh temporary SQLite file unless ``--db`` names a store), serves the real app on a loopback
port, logs in through the login form in Debian's chromium (Playwright, ``/usr/bin/chromium``)
and loads ``/ui/agents/bench`` ``--runs`` times (the first run with a cold browser cache).
Reports per page:

* ``html_bytes``: the HTML document; ``total_bytes``: everything the page loaded (HTML, CSS,
  htmx), uncompressed, as the server sent it (no compression middleware);
* ``server_ms``: request start to the last byte of the HTML (Navigation Timing);
* ``first_paint_ms`` / ``first_contentful_paint_ms``: navigation start to chromium's first
  (contentful) paint; ``dom_content_loaded_ms`` and ``load_ms`` likewise.

Medians over the warm runs are printed with the cold first run. The charts page of the same
agent (it reads every memory) is measured the same way for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from memvault.api.auth import Actor  # noqa: E402
from memvault.config import load_config  # noqa: E402
from memvault.embeddings import default_embedder  # noqa: E402
from memvault.server.keys import open_key_store  # noqa: E402
from memvault.server.rest import create_app  # noqa: E402
from memvault.service import MemoryService  # noqa: E402
from ui.conftest import run_app  # noqa: E402  (the test suite's real-port runner)

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CATEGORIES = ("semantic", "episodic", "procedural", "working")
SUBJECTS = ("deploys", "billing", "the on-call rota", "customer Globex", "the data warehouse")


async def fill(url: str, count: int) -> float:
    """Store ``count`` memories for agent ``bench``; returns the seconds it took."""
    service = MemoryService(load_config(url=url), embedder=default_embedder())
    admin = Actor.admin("bench")
    started = time.perf_counter()
    try:
        for start in range(0, count, 500):
            items = [
                {
                    "content": f"Note {n}: a fact about {SUBJECTS[n % len(SUBJECTS)]}, "
                    f"recorded for the dashboard benchmark (item {n}).",
                    "category": CATEGORIES[n % len(CATEGORIES)],
                    "tags": [f"t{n % 7}"],
                }
                for n in range(start, min(count, start + 500))
            ]
            batch = {"items": items, "agent_id": "bench", "dedup": False}
            await service.call(admin, "store_many", batch)
    finally:
        await service.close()
    return time.perf_counter() - started


_TIMING = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paints = Object.fromEntries(performance.getEntriesByType('paint')
    .map(p => [p.name, p.startTime]));
  const resources = performance.getEntriesByType('resource');
  return {
    html_bytes: nav.decodedBodySize,
    total_bytes: nav.decodedBodySize + resources.reduce((s, r) => s + r.decodedBodySize, 0),
    resources: resources.length,
    server_ms: nav.responseEnd - nav.requestStart,
    first_paint_ms: paints['first-paint'] ?? null,
    first_contentful_paint_ms: paints['first-contentful-paint'] ?? null,
    dom_content_loaded_ms: nav.domContentLoadedEventEnd,
    load_ms: nav.loadEventEnd,
  };
}"""


def measure(base: str, secret: str, paths: list[str], runs: int) -> dict[str, Any]:
    """Load each page ``runs`` times in chromium; the cold run and the medians of the rest."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{base}/ui/login")
        page.fill("#key", secret)
        page.click("button[type=submit]")
        page.wait_for_url("**/ui/")
        for path in paths:
            samples = []
            for _ in range(runs):
                page.goto(f"{base}{path}", wait_until="load")
                page.wait_for_timeout(50)  # paint entries are queued just after load
                samples.append(page.evaluate(_TIMING))
            warm = samples[1:] or samples
            out[path] = {
                "cold": samples[0],
                "warm_median": {
                    k: statistics.median(s[k] for s in warm if s[k] is not None)
                    for k in samples[0]
                    if any(s[k] is not None for s in warm)
                },
            }
        browser.close()
    return out


def main() -> int:
    """Fill a store, serve it, measure the agent view; print (and optionally save) the result."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--db", default=None, help="a storage URL (default: a temporary SQLite file)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the result to this file")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or str(Path(tmp) / "bench_ui.db")
        with ThreadPoolExecutor(1) as pool:  # its own loop, away from Playwright's
            fill_seconds = pool.submit(asyncio.run, fill(url, args.count)).result()
        keys = open_key_store(url)
        _, secret = keys.create(name="bench", scopes=["read"])
        service = MemoryService(load_config(url=url), embedder=default_embedder())
        base, stop = run_app(create_app(service, keys=keys))
        try:
            pages = measure(
                base, secret, ["/ui/agents/bench", "/ui/agents/bench/charts"], args.runs
            )
        finally:
            stop()
    result = {
        "count": args.count,
        "store": "sqlite (temporary file)" if args.db is None else "given URL",
        "fill_seconds": round(fill_seconds, 1),
        "runs": args.runs,
        "pages": pages,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""End-to-end demo on the embedded default: a small agent history, searches, injected context.

Runs fully offline: one SQLite file in a temporary directory and the bundled embedding model.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memvault import Memory

AGENT = "dev-1"
NOW = datetime.now(UTC)

HISTORY: list[dict[str, object]] = [
    {
        "content": "The user prefers Litestar over Flask for new web services.",
        "tags": ["non-inferable"],
    },
    {
        "content": "Code reviews on this team need two approvals before merging.",
        "category": "procedural",
    },
    {
        "content": "The QA lead, Priya, wants detailed test plans attached to every PR.",
        "category": "social",
    },
    {
        "content": "Project Atlas stores its data in PostgreSQL 16 with pgvector.",
        "category": "semantic",
    },
    {
        "content": "Always run `make test` before pushing; CI takes about 12 minutes.",
        "category": "procedural",
    },
    {
        "content": (
            "Deployed v2.1 to production; rolled back after 20 minutes because of a memory "
            "leak in the cache layer."
        ),
        "category": "episodic",
        "created_at": NOW - timedelta(days=21),
        "metadata": {"task": "T-12"},
    },
    {
        "content": (
            "Fixed the cache memory leak by bounding the LRU to 10,000 entries; "
            "v2.1.1 deployed cleanly."
        ),
        "category": "episodic",
        "created_at": NOW - timedelta(days=19),
        "metadata": {"task": "T-13"},
    },
    {
        "content": (
            "Sprint 14 retro: the team chose JWT access tokens over server-side sessions "
            "for the API."
        ),
        "category": "episodic",
        "created_at": NOW - timedelta(days=10),
        "tags": ["non-inferable", "decision"],
    },
    {
        "content": "The user's timezone is Europe/Berlin; schedule meetings after 10:00.",
        "category": "semantic",
    },
    {
        "content": "Staging deploys go through the `deploy-staging` GitHub Actions workflow.",
        "category": "procedural",
    },
    {
        "content": "Customer Acme reported slow search on accounts with more than 50k documents.",
        "category": "episodic",
        "created_at": NOW - timedelta(days=3),
    },
    {
        "content": "Marco from the platform team owns the Kubernetes cluster and on-call rota.",
        "category": "social",
    },
]

QUERIES = [
    "which web framework should I use?",
    "what went wrong with the last release?",
    "how do we authenticate API calls?",
    "who should I ask about the cluster?",
]


def main() -> None:
    """Store the history, run searches, and print an injected context."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        print(f"memvault demo: store at {db} (embedded SQLite + bundled MiniLM, offline)\n")
        with Memory(str(db)) as mem:
            t0 = time.perf_counter()
            ids = mem.add_many(HISTORY, agent_id=AGENT)  # type: ignore[arg-type]
            print(
                f"stored {len(ids)} memories in {time.perf_counter() - t0:.2f}s (incl. model load)"
            )
            print(f"counts: {mem.stats().by_category}\n")

            for q in QUERIES:
                t0 = time.perf_counter()
                hits = mem.search(q, agent_id=AGENT, limit=3)
                ms = (time.perf_counter() - t0) * 1000
                print(f"search: {q!r}  ({ms:.1f} ms)")
                for h in hits:
                    print(f"  {h.relevance_score:.3f}  [{h.category.value}] {h.content}")
                print()

            print(
                "another agent sees nothing of dev-1:",
                mem.search("web framework", agent_id="dev-2"),
            )
            print()
            ctx = mem.context("implement the auth endpoint", agent_id=AGENT, token_budget=200)
            print(
                f"context for 'implement the auth endpoint' ({ctx.tokens} tokens, role={ctx.role}):"
            )
            print(ctx.text)


if __name__ == "__main__":
    main()

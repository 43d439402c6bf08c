"""``memvault learn``, ``approvals``, ``profile`` and ``evolve`` against a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

from memvault import AsyncMemory
from memvault.config import load_config
from memvault.protocols import Embedder

if TYPE_CHECKING:
    from conftest import Cli  # tests/cli/conftest.py (no package: typing only)

LESSON = {
    "discovery": "Image pushes hit the registry rate limit when run in parallel.",
    "condition": "pushing images during a deploy",
    "action": "push one image at a time with backoff",
    "rationale": "the registry throttles parallel pushes",
    "execution_steps": ["push", "back off on 429", "retry"],
    "confidence": 0.9,
}


def _queue_a_proposal(db: str, minilm: Embedder) -> None:
    """Three agents fail alike (scripted proposer); the evolver queues one proposal."""
    from memvault.llm.scripted import ScriptedLLM

    async def run() -> None:
        llm = ScriptedLLM([json.dumps(LESSON)], repeat_last=True)
        async with AsyncMemory(db, config=load_config(url=db), embedder=minilm, llm=llm) as mem:
            for agent in ("a", "b", "c"):
                report = await mem.learn_from(
                    {"success": False, "error": "RegistryRateLimitError: 429"}, agent_id=agent
                )
                assert report.captured
            assert len((await mem.evolve(force=True)).emitted) == 1

    asyncio.run(run())


def test_learn_without_an_llm_records_the_outcome(run: Cli, db: str) -> None:
    result = run("--db", db, "learn", "--agent", "dev-1", "--failure", "--error", "boom", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert report["captured"] is False and report["trajectory_id"]
    assert "no LLM" in report["reason"]
    plain = run("--db", db, "learn", "--agent", "dev-1", "--success")
    assert plain.code == 0 and "recorded" in plain.out


def test_learn_needs_to_know_whether_the_task_succeeded(run: Cli, db: str, tmp_path: Path) -> None:
    result = run("--db", db, "learn", "--agent", "dev-1", "--error", "boom")
    assert result.code == 2 and "--success or --failure" in result.err
    bad = tmp_path / "outcome.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    result = run("--db", db, "learn", "--agent", "dev-1", "--outcome", str(bad))
    assert result.code == 2 and "JSON object" in result.err


def test_review_the_approval_queue(run: Cli, db: str, minilm: Embedder) -> None:
    _queue_a_proposal(db, minilm)
    listed = run("--db", db, "approvals", "list", "--status", "pending", "--json")
    assert listed.code == 0, listed.err
    (item,) = listed.json()
    assert item["proposal"]["scope"] == "org"
    shown = run("--db", db, "approvals", "show", item["id"])
    assert shown.code == 0 and "push one image at a time" in shown.out
    assert run("--db", db, "approvals", "reject", item["id"]).code == 2  # --reason required
    approved = run("--db", db, "approvals", "approve", item["id"], "--reason", "ok", "--json")
    assert approved.code == 0, approved.err
    assert approved.json()["status"] == "approved" and approved.json()["applied_id"]
    again = run("--db", db, "approvals", "approve", item["id"])
    assert again.code != 0 and "already approved" in again.err
    assert run("--db", db, "approvals", "show", "no-such-id").code != 0
    table = run("--db", db, "approvals", "list")
    assert table.code == 0 and "approved" in table.out


def test_profiles_and_the_evolver(run: Cli, db: str) -> None:
    done = run("--db", db, "profile", "set", "dev-1", "--role", "backend", "--seniority", "senior")
    assert done.code == 0 and "role=backend" in done.out
    shown = run("--db", db, "profile", "show", "dev-1", "--json")
    assert shown.json()["seniority"] == "senior"
    assert run("--db", db, "profile", "set", "dev-1", "--seniority", "boss").code == 2
    cycle = run("--db", db, "evolve", "--json")
    assert cycle.code == 0 and cycle.json()["emitted"] == []

"""Does learning stop agents from repeating failures? A scripted multi-agent simulation.

    python benchmarks/bench_learning.py [--agents 12] [--rounds 6] [--tasks 4] [--seed 0]
                                        [--embedder minilm|hashing]

Agents in three departments run tasks of six types. Four task types hide a recurring trap (a
specific failure that hits whoever runs the task, with probability 0.9, until the agent's
injected context holds the lesson for it); every task also fails with a transient error with
probability 0.08 (noise categories, not a recurring pattern). An agent "knows" the fix when the
context memvault injects for the task (``AsyncMemory.context``) contains the lesson's action.

Two runs on fresh SQLite stores with the same seed:

* learning off: outcomes are not reported;
* learning on: every outcome goes to ``learn_from`` (scripted proposer LLM), the evolver runs
  after every round, and a simulated human approves every queued proposal.

Reported: the repeated-failure rate (failures of a trap an agent had already hit, over its
later encounters), the first-encounter failure rate (org skills help agents that never failed),
and proposal precision (queue items whose pattern is one of the real recurring traps).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memvault import AsyncMemory
from memvault.config import load_config
from memvault.embeddings import HashingEmbedder, default_embedder
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder

TRAPS = {
    # task type -> (error category, description, lesson action)
    "deploy": (
        "RegistryRateLimitError",
        "deploy the {svc} service to staging",
        "push container images one at a time with exponential backoff",
    ),
    "migrate": (
        "SchemaDriftError",
        "run the database migrations for {svc}",
        "diff the live schema against the migration head before migrating",
    ),
    "release": (
        "ChangelogMissingError",
        "cut a release of the {svc} package",
        "generate the changelog from merged pull requests before tagging",
    ),
    "oncall": (
        "AlertStormError",
        "handle the pager alert storm for {svc}",
        "silence duplicate alerts by fingerprint before triage",
    ),
}
SAFE = {"review": "review the pull request for {svc}", "docs": "update the README of {svc}"}
NOISE = ("TimeoutError", "ConnectionResetError", "DnsResolutionError")
SERVICES = ("payments", "search", "billing", "auth", "ledger", "catalog")
DEPARTMENTS = ("platform", "data", "product")
TRAP_RATE = 0.9
NOISE_RATE = 0.08


def _lesson(category: str) -> dict[str, object]:
    for _task, (cat, desc, action) in TRAPS.items():
        if cat.lower() == category:
            what = desc.format(svc="a").replace(" a ", " ").replace("  ", " ")
            return {
                "name": category,
                "discovery": f"Tasks that {what} fail with {category} unless handled.",
                "condition": f"when you {what}",
                "action": action,
                "rationale": f"{category} recurs for every agent doing this",
                "execution_steps": [action],
                "confidence": 0.85,
            }
    return {  # transient noise: a vague lesson the proposer is not sure about
        "discovery": f"A task failed once with a transient {category}.",
        "condition": f"a transient {category} occurs",
        "action": "retry the step once",
        "rationale": "transient errors usually pass",
        "execution_steps": ["retry"],
        "confidence": 0.55,
    }


def _proposer() -> ScriptedLLM:
    def answer(messages: Sequence[ChatMessage]) -> str:
        payload = json.loads(messages[-1].content.split("\n", 1)[1])
        return json.dumps(_lesson(payload.get("error_category") or "unknown"))

    return ScriptedLLM([answer], repeat_last=True)


@dataclass
class Stats:
    """Counts of one run."""

    tasks: int = 0
    failures: int = 0
    first: int = 0  # first encounters of a trap by an agent
    first_failed: int = 0
    repeat: int = 0  # later encounters of a trap an agent already hit
    repeat_failed: int = 0
    queue: int = 0
    queue_true: int = 0
    hit: set[tuple[str, str]] = field(default_factory=set)


async def simulate(
    *,
    learning: bool,
    agents: int,
    rounds: int,
    tasks: int,
    seed: int,
    embedder: Embedder,
    root: Path,
) -> Stats:
    rng = random.Random(seed)
    db = root / ("on.db" if learning else "off.db")
    cfg = load_config(url=str(db), env={})
    mem = AsyncMemory(str(db), config=cfg, embedder=embedder, llm=_proposer())
    names = [f"agent-{i}" for i in range(agents)]
    stats = Stats()
    async with mem:
        for i, name in enumerate(names):
            await mem.set_profile(name, role=f"role-{i % 2}", department=DEPARTMENTS[i % 3])
            await mem.add(f"{name} works on the {SERVICES[i % len(SERVICES)]} team", agent_id=name)
        for _round in range(rounds):
            for name in names:
                for _ in range(tasks):
                    kind = rng.choice([*TRAPS, *SAFE])
                    svc = rng.choice(SERVICES)
                    text = (TRAPS[kind][1] if kind in TRAPS else SAFE[kind]).format(svc=svc)
                    ctx = await mem.context(text, agent_id=name, token_budget=600)
                    outcome: dict[str, object] = {
                        "success": True,
                        "task_type": kind,
                        "description": text,
                    }
                    applied = []
                    if kind in TRAPS and rng.random() < TRAP_RATE:
                        category, _desc, action = TRAPS[kind]
                        known = action in ctx.text
                        first = (name, category) not in stats.hit
                        stats.first += first
                        stats.repeat += not first
                        if known:
                            applied = [e.id for e in ctx.entries if action in e.content]
                        else:
                            stats.first_failed += first
                            stats.repeat_failed += not first
                            stats.hit.add((name, category))
                            outcome.update(
                                success=False, error=f"{category}: the {kind} of {svc} failed"
                            )
                    if outcome["success"] and rng.random() < NOISE_RATE:
                        noise = rng.choice(NOISE)
                        outcome.update(success=False, error=f"{noise}: transient failure")
                    stats.tasks += 1
                    stats.failures += not outcome["success"]
                    if learning:
                        if applied:
                            outcome["applied_skills"] = applied
                        report = await mem.learn_from(outcome, agent_id=name)
                        assert report.error is None, report.error
            if learning:
                await mem.evolve(force=True)
                for item in await mem.learning.approvals(status="pending"):
                    await mem.learning.approve(item.id, actor="human:bench", reason="simulated")
        if learning:
            items = await mem.learning.approvals()
            real = {f"error:{cat.lower()}" for cat, _d, _a in TRAPS.values()}
            stats.queue = len(items)
            stats.queue_true = sum(1 for it in items if it.pattern_key in real)
    return stats


def _rate(num: int, den: int) -> str:
    return f"{num / den:.3f} ({num}/{den})" if den else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    args = parser.parse_args()
    embedder: Embedder = default_embedder() if args.embedder == "minilm" else HashingEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for learning in (False, True):
            start = time.perf_counter()
            results[learning] = simulate(
                learning=learning,
                agents=args.agents,
                rounds=args.rounds,
                tasks=args.tasks,
                seed=args.seed,
                embedder=embedder,
                root=Path(tmp),
            )
            results[learning] = asyncio.run(results[learning])
            results[learning].hit.clear()
            print(f"learning {'on ' if learning else 'off'}: {time.perf_counter() - start:.1f} s")
    off, on = results[False], results[True]
    print(
        f"\n{args.agents} agents x {args.rounds} rounds x {args.tasks} tasks, seed {args.seed}, "
        f"embedder {args.embedder}"
    )
    print(f"{'':28}{'learning off':>22}{'learning on':>22}")
    rows = (
        ("task failure rate", _rate(off.failures, off.tasks), _rate(on.failures, on.tasks)),
        (
            "repeated-failure rate",
            _rate(off.repeat_failed, off.repeat),
            _rate(on.repeat_failed, on.repeat),
        ),
        (
            "first-encounter failure",
            _rate(off.first_failed, off.first),
            _rate(on.first_failed, on.first),
        ),
    )
    for label, a, b in rows:
        print(f"{label:28}{a:>22}{b:>22}")
    print(
        f"proposal precision: {_rate(on.queue_true, on.queue)} "
        f"(approval-queue items matching a real recurring trap; {len(TRAPS)} traps exist)"
    )


if __name__ == "__main__":
    main()

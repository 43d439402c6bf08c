"""Does fine-tuning the embedder help? Base vs fine-tuned MiniLM on held-out real queries.

The corpus is a memory dataset the user downloaded (it is not bundled): LoCoMo or the
LongMemEval dev set. Queries are the datasets' own human-written questions, paired with their
gold evidence turns; no LLM is involved (the pipeline's generate stage reads them as a
``pairs_file``), so the run is deterministic. Every dialogue turn of the dataset is in the
retrieval pool (as a store's memories would be), evidence or not.

The pipeline splits the evidence passages into train and held-out sets *by passage*; the
reported NDCG@10 / Recall@10 are over the held-out questions only, ranked against the whole
pool. The script prints the time of each stage, then checks deploy and rollback: after the
deploy ``finetuned:<registry>`` serves the checkpoint (a new model id, so stores need
``memvault reindex``), and after ``rollback_checkpoint("base")`` it serves the base model again.

    python benchmarks/bench_finetune.py --dataset locomo --data locomo10.json
    python benchmarks/bench_finetune.py --dataset longmemeval --data longmemeval_s_dev100.json \
        --max-passages 5000
    python benchmarks/bench_finetune.py ... --trainer biencoder   # needs memvault[finetune]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from memvault.bench.datasets import load_locomo, load_longmemeval
from memvault.embeddings import create_embedder
from memvault.finetune import FineTuneManager, FineTunePlan, Stage


def locomo_corpus(path: Path) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """(question, evidence turn) pairs for every answerable question, and every turn."""
    data = load_locomo(path)
    pairs: list[dict[str, str]] = []
    turns: list[tuple[str, str]] = []
    for conv in data.conversations:
        text = {t.dia_id: f"{t.speaker}: {t.text}" for t in conv.turns}
        turns += [(f"{conv.sample_id}:{k}", v) for k, v in text.items()]
        for qa in conv.qas:
            if qa.category_name == "adversarial":
                continue  # no answer in the conversation by design
            pairs += [{"query": qa.question, "passage": text[e]} for e in qa.evidence]
    return pairs, turns


def longmemeval_corpus(path: Path) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """(question, has_answer turn) pairs, and every haystack turn (deduplicated)."""
    data = load_longmemeval(path)
    pairs: list[dict[str, str]] = []
    turns: dict[str, str] = {}
    for item in data.items:
        for session in item.sessions:
            for turn in session.turns:
                body = f"{turn.role}: {turn.content}"
                turns[f"{session.session_id}:{turn.index}"] = body
                if turn.has_answer and not item.is_abstention:
                    pairs.append({"query": item.question, "passage": body})
    return pairs, sorted(turns.items())


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)) for r in rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=["locomo", "longmemeval"], required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--trainer", choices=["adapter", "biencoder"], default="adapter")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument("--hard-negatives", type=int, default=5)
    parser.add_argument(
        "--max-passages",
        type=int,
        default=None,
        help="Cap the pool: every evidence turn plus this many others in all, sampled with a "
        "fixed seed (LongMemEval's 47k long turns take most of an hour to embed on 2 cores).",
    )
    parser.add_argument("--registry", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args()

    build = locomo_corpus if args.dataset == "locomo" else longmemeval_corpus
    pairs, turns = build(args.data)
    if args.max_passages is not None and len(turns) > args.max_passages:
        gold = {p["passage"] for p in pairs}
        keep = [t for t in turns if t[1] in gold]
        others = [t for t in turns if t[1] not in gold]
        room = max(0, args.max_passages - len(keep))
        turns = sorted(keep + random.Random(0).sample(others, min(room, len(others))))
    registry = args.registry or Path(tempfile.mkdtemp(prefix="memvault-ft-"))
    pairs_file = registry.parent / f"{registry.name}-pairs.jsonl"
    pairs_file.write_text("\n".join(json.dumps(p) for p in pairs) + "\n", encoding="utf-8")

    async def all_turns() -> list[tuple[str, str]]:
        return turns

    fields: dict[str, object] = {
        "pairs_file": str(pairs_file),
        "trainer": args.trainer,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "hard_negatives": args.hard_negatives,
    }
    if args.learning_rate is not None:
        key = "adapter_learning_rate" if args.trainer == "adapter" else "learning_rate"
        fields[key] = args.learning_rate
    plan = FineTunePlan.model_validate(fields)
    manager = FineTuneManager(registry=registry, passage_source=all_turns)
    started = time.perf_counter()
    run = await manager.start(plan, wait=True)
    total = time.perf_counter() - started
    m = run.metrics
    assert m is not None

    print(f"dataset {args.dataset}: {len(pairs)} question/evidence pairs, {len(turns)} turns")
    print(f"trainer {run.trainer}, run {run.run_id}, status {run.status.value}")
    print(f"held-out: {m.queries} questions ranked against {m.passages} passages\n")
    print(
        _table(
            [
                ["model", "NDCG@10", "Recall@10"],
                ["base MiniLM", f"{m.base_ndcg_at_10:.4f}", f"{m.base_recall_at_10:.4f}"],
                [
                    f"fine-tuned ({run.trainer})",
                    f"{m.checkpoint_ndcg_at_10:.4f}",
                    f"{m.checkpoint_recall_at_10:.4f}",
                ],
            ]
        )
    )
    print()
    stage_rows = [["stage", "seconds", "status"]]
    for record in run.stages:
        stage_rows.append([record.stage.value, f"{record.seconds or 0:.2f}", record.status.value])
    stage_rows.append(["total", f"{total:.2f}", ""])
    print(_table(stage_rows))

    # Deploy and rollback: what `finetuned:<registry>` serves before and after.
    spec = f"finetuned:{registry}"
    rollback: dict[str, object] = {"deployed": run.deployed}
    if run.deployed:
        served = create_embedder(spec).model_id
        record = await manager.rollback_checkpoint(
            "base", actor="bench", confirm=True, reason="benchmark rollback check"
        )
        after = create_embedder(spec).model_id
        again = await manager.rollback_checkpoint(
            str(run.checkpoint_id), actor="bench", confirm=True, reason="benchmark redeploy"
        )
        rollback.update(
            served_after_deploy=served,
            served_after_rollback=after,
            rollback_record=record.checkpoint_id,
            served_after_redeploy=create_embedder(spec).model_id,
            redeploy_record=again.checkpoint_id,
        )
        print(f"\ndeployed: {spec} served {served}")
        print(f"rollback to base: {spec} serves {after}")
        print(f"roll forward to {again.checkpoint_id}: serves {create_embedder(spec).model_id}")
    else:
        print(f"\nnot deployed: {run.stage(Stage.DEPLOY).summary.get('reason')}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "dataset": args.dataset,
                    "run": run.model_dump(mode="json"),
                    "total_seconds": total,
                    "rollback": rollback,
                },
                indent=2,
            ),
            encoding="utf-8",
        )


if __name__ == "__main__":
    asyncio.run(main())

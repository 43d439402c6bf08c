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

``--end-to-end`` measures what a *deployed* fine-tuned embedder does to memvault's own search
(the default preset, ``add_many`` + ``search(limit=10)`` exactly as ``memvault bench locomo`` /
``memvault bench longmemeval``): the pipeline trains on one part of the dataset (LoCoMo
conversations ``0 .. --train-units - 1`` or LongMemEval questions ``0 .. --train-units - 1``),
deploys, and the base and the deployed embedder then run the benchmark on the held-out rest.
Training pairs come from ``--train-queries``: ``synthetic`` (the default, what an organisation
without gold questions has) writes queries from the training documents themselves with
:func:`extractive_queries`, a deterministic non-LLM generator (the pipeline's generate stage
needs an LLM otherwise; none is assumed here); ``gold`` uses the training part's own questions.
``--synthetic-docs all`` writes synthetic queries from the held-out turns as well (an
organisation fine-tunes on the memories it will search; their questions are never seen).
Embeddings of the frozen base are cached on disk (``--cache-dir``), so the adapter checkpoint,
which runs on that base, costs no second embedding pass.

    python benchmarks/bench_finetune.py --end-to-end --dataset locomo --data locomo10.json \
        --markdown benchmarks/results/finetune_end_to_end_locomo.md
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _embcache import CachedEmbedder

from memvault.bench import run_locomo, run_longmemeval
from memvault.bench.datasets import LocomoDataset, LongMemEvalDataset, load_locomo, load_longmemeval
from memvault.bench.locomo import turn_content
from memvault.bench.report import MetricRow
from memvault.embeddings import create_embedder
from memvault.embeddings.adapter import load_checkpoint_embedder, read_active
from memvault.finetune import FineTuneManager, FineTunePlan, Stage
from memvault.protocols import Embedder


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


# -- end-to-end: a deployed checkpoint inside memvault's own search --------------------------------

_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each even ever every few for from further get gets getting
    got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just
    know let let's like lot made make many me might more most much must mustn't my myself need
    never no nor not now of off oh okay ok on once one only or other ought our ours ourselves
    out over own really right said same say says see she she'd she'll she's should shouldn't so
    some something still such sure than thank thanks that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've thing things think
    this those though through to too totally um under until up us very want was wasn't way we
    we'd we'll we're we've well were weren't what what's when when's where where's which while
    who who's whom why why's will with won't would wouldn't yeah yes yet you you'd you'll you're
    you've your yours yourself yourselves great good awesome wow cool glad love amazing""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\\-]+")


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if len(w) >= 3 and w.lower() not in _STOPWORDS]


def extractive_queries(
    passages: Sequence[str], *, per_passage: int = 2, seed: int = 0
) -> list[dict[str, str]]:
    """Synthetic ``{"query", "passage"}`` pairs from the passages alone (no LLM, no gold).

    A passage is ``"<speaker>: <text>"`` (a stored turn). Its content words (no stopwords, three
    letters or more) are ranked by inverse document frequency over ``passages``; the rarest are
    the words a later question most likely names. Two queries per passage:

    * a question: ``"What did <speaker> say about <three rarest words, in passage order>?"``
      (``I`` / ``you`` for LongMemEval's ``user`` / ``assistant``), the shape of LoCoMo's and
      LongMemEval's questions without their paraphrase;
    * a keyword query: up to four of the rarest words, shuffled (a search-box query).

    Passages with fewer than four content words (greetings, "sure!") get none. The result is
    deterministic for a given ``seed``.
    """
    rng = random.Random(seed)
    bodies = [p.split(":", 1) if ":" in p[:40] else ["", p] for p in passages]
    words = [_content_words(body) for _, body in bodies]
    df = Counter(w.lower() for ws in words for w in set(ws))
    pairs: list[dict[str, str]] = []
    for passage, (speaker, _), ws in zip(passages, bodies, words, strict=True):
        unique = list(dict.fromkeys(ws))
        if len(unique) < 4:
            continue
        rank = sorted(unique, key=lambda w: (df[w.lower()], unique.index(w)))
        who = speaker.strip()
        who = {"user": "I", "assistant": "you"}.get(who.lower(), who) or "someone"
        top3 = [w for w in unique if w in rank[:3]]
        queries = [f"What did {who} say about {' '.join(top3)}?"]
        keywords = rank[:4]
        rng.shuffle(keywords)
        queries.append(" ".join(keywords))
        for q in queries[:per_passage]:
            pairs.append({"query": q, "passage": passage.strip()})
    return pairs


def _locomo_split(
    data: LocomoDataset, train_units: int
) -> tuple[list[str], list[dict[str, str]], LocomoDataset]:
    train = data.conversations[:train_units]
    passages = [turn_content(t) for conv in train for t in conv.turns]
    gold: list[dict[str, str]] = []
    for conv in train:
        text = {t.dia_id: turn_content(t) for t in conv.turns}
        for qa in conv.qas:
            if qa.category in (1, 2, 3, 4) and qa.question.strip():
                gold += [{"query": qa.question, "passage": text[e]} for e in qa.evidence]
    held_out = dataclasses.replace(data, conversations=data.conversations[train_units:])
    return passages, gold, held_out


def _lme_split(
    data: LongMemEvalDataset, train_units: int
) -> tuple[list[str], list[dict[str, str]], LongMemEvalDataset]:
    train = data.items[:train_units]
    passages: dict[str, None] = {}
    gold: list[dict[str, str]] = []
    for item in train:
        for session in item.sessions:
            for turn in session.turns:
                if not turn.content.strip():
                    continue
                body = f"{turn.role}: {turn.content}"
                passages[body] = None
                if turn.has_answer and not item.is_abstention:
                    gold.append({"query": item.question, "passage": body})
    held_out = dataclasses.replace(data, items=data.items[train_units:])
    return list(passages), gold, held_out


_LOCOMO_COLUMNS = ("recall@10", "recall@5", "ndcg@10", "mrr")
_LME_COLUMNS = ("turn_recall@10", "session_any@5", "session_all@5", "ndcg@10")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _delta(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{b - a:+.4f}"


def _comparison(
    base_rows: Sequence[MetricRow], ft_rows: Sequence[MetricRow], columns: Sequence[str]
) -> list[list[str]]:
    rows = [["group", "n", *(f"{c} base / ft (delta)" for c in columns)]]
    for b, f in zip(base_rows, ft_rows, strict=True):
        assert b.key == f.key and b.questions == f.questions
        cells = [
            f"{_fmt(b.metrics.get(c))} / {_fmt(f.metrics.get(c))} "
            f"({_delta(b.metrics.get(c), f.metrics.get(c))})"
            for c in columns
        ]
        rows.append([b.label, str(b.questions), *cells])
    return rows


def _markdown(rows: Sequence[Sequence[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


async def end_to_end(args: argparse.Namespace) -> None:
    """Train on one part of the dataset, deploy, and run memvault's benchmark on the rest."""
    overall_started = time.perf_counter()
    if args.dataset == "locomo":
        locomo = load_locomo(args.data)
        passages, gold, held_locomo = _locomo_split(locomo, args.train_units)
        held_units = len(held_locomo.conversations)
        unit_name = "conversations"
        held_docs = _locomo_split(held_locomo, held_units)[0]
    else:
        lme = load_longmemeval(args.data)
        passages, gold, held_lme = _lme_split(lme, args.train_units)
        held_units = len(held_lme.items)
        unit_name = "questions"
        held_docs = _lme_split(held_lme, held_units)[0]
    if held_units == 0:
        raise SystemExit(f"--train-units {args.train_units} leaves no held-out {unit_name}")
    held_out_units = getattr(args, "held_out_units", None)
    if held_out_units is not None and held_out_units < held_units:
        # Evaluate only the first held-out units (LongMemEval's 500-turn haystacks take ~30 s
        # a store on two busy cores); training still sees only the training part.
        held_units = held_out_units
        if args.dataset == "locomo":
            conversations = held_locomo.conversations[:held_units]
            held_locomo = dataclasses.replace(held_locomo, conversations=conversations)
        else:
            held_lme = dataclasses.replace(held_lme, items=held_lme.items[:held_units])

    rng = random.Random(args.seed)
    if args.train_queries == "synthetic":
        # "all": an organisation fine-tunes on the very memories it will search; the held-out
        # part's documents are then trained on too, but never its questions.
        pool = (
            list(dict.fromkeys([*passages, *held_docs]))
            if args.synthetic_docs == "all"
            else passages
        )
        if args.train_max_passages is not None and len(pool) > args.train_max_passages:
            pool = rng.sample(pool, args.train_max_passages)
        pairs = extractive_queries(pool, seed=args.seed)
        docs = (
            "every turn (held-out turns included, never their questions)"
            if args.synthetic_docs == "all"
            else "the training part's turns"
        )
        generator = (
            f"bench_finetune.extractive_queries (no LLM) over {docs}: per turn, "
            "'What did <speaker> say about <3 rarest words>?' and a shuffled 4-rarest-word "
            "keyword query; rarity = IDF over those turns"
        )
    else:
        pool = passages
        if args.train_max_passages is not None and len(pool) > args.train_max_passages:
            golden = {p["passage"] for p in gold}
            others = [p for p in pool if p not in golden]
            room = max(0, args.train_max_passages - len(golden))
            pool = sorted(golden) + rng.sample(others, min(room, len(others)))
        pairs = gold
        generator = "the training part's own gold questions paired with their evidence turns"

    registry = args.registry or Path(tempfile.mkdtemp(prefix="memvault-ft-e2e-"))
    pairs_file = registry.parent / f"{registry.name}-pairs.jsonl"
    pairs_file.write_text("\n".join(json.dumps(p) for p in pairs) + "\n", encoding="utf-8")
    train_pool = [(f"turn#{i}", text) for i, text in enumerate(pool)]

    async def training_turns() -> list[tuple[str, str]]:
        return train_pool

    fields: dict[str, object] = {
        "pairs_file": str(pairs_file),
        "trainer": args.trainer,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "hard_negatives": args.hard_negatives,
        # Deploy whatever was trained: the question here is what the deployed checkpoint does
        # to memvault's recall, so the pipeline's own gate (held-out synthetic pairs) is reported
        # below, not enforced.
        "require_improvement": False,
        "seed": args.seed,
    }
    if args.learning_rate is not None:
        key = "adapter_learning_rate" if args.trainer == "adapter" else "learning_rate"
        fields[key] = args.learning_rate
    plan = FineTunePlan.model_validate(fields)
    manager = FineTuneManager(registry=registry, passage_source=training_turns)
    started = time.perf_counter()
    run = await manager.start(plan, wait=True)
    pipeline_seconds = time.perf_counter() - started
    m = run.metrics
    assert m is not None and run.deployed, run.model_dump(mode="json")

    # The base embedder, cached on disk; the deployed checkpoint is loaded from the registry
    # exactly as `embedder: finetuned:<registry>` would load it, but over the cached base (an
    # adapter runs on the frozen base model, so its vectors are the base ones, mapped).
    # The plan's base model (all-MiniLM-L6-v2 unless named), so base and fine-tuned differ only
    # by the checkpoint.
    base: Embedder = CachedEmbedder(create_embedder(plan.base_model), args.cache_dir)
    deployed = load_checkpoint_embedder(registry, create_base=lambda _spec: base)
    served = create_embedder(f"finetuned:{registry}").model_id
    active = read_active(registry) or {}
    assert deployed.model_id == served, (deployed.model_id, served)

    presets = [p.strip() for p in args.presets.split(",") if p.strip()] or ["default"]
    reports: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    for preset in presets:
        for name, embedder in (("base", base), ("fine-tuned", deployed)):
            t0 = time.perf_counter()
            if args.dataset == "locomo":
                report: Any = await run_locomo(
                    held_locomo, preset=preset, limit=10, embedder=embedder, backend=args.backend
                )
            else:
                report = await run_longmemeval(
                    held_lme, preset=preset, limit=10, embedder=embedder, backend=args.backend
                )
            reports.setdefault(preset, {})[name] = report
            seconds[f"{preset}/{name}"] = time.perf_counter() - t0
            if isinstance(base, CachedEmbedder):
                base.save()

    columns = _LOCOMO_COLUMNS if args.dataset == "locomo" else _LME_COLUMNS
    tables = {
        preset: _comparison(
            [*pair["base"].rows, pair["base"].overall],
            [*pair["fine-tuned"].rows, pair["fine-tuned"].overall],
            columns,
        )
        for preset, pair in reports.items()
    }
    b = reports[presets[0]]["base"]
    stage_rows = [["stage", "seconds", "status"]]
    stage_rows += [[r.stage.value, f"{r.seconds or 0:.2f}", r.status.value] for r in run.stages]
    gate = (
        f"NDCG@10 {m.base_ndcg_at_10:.4f} -> {m.checkpoint_ndcg_at_10:.4f}, "
        f"Recall@10 {m.base_recall_at_10:.4f} -> {m.checkpoint_recall_at_10:.4f} "
        f"({m.queries} held-out training-style queries against {m.passages} passages; "
        f"require_improvement would {'deploy' if m.improved else 'NOT deploy'} it)"
    )
    held_label = (
        f"{unit_name} {args.train_units}..{args.train_units + held_units - 1}"
        f" ({held_units}, {b.questions} questions)"
    )
    timings = ", ".join(f"{k} {v:.0f}s" for k, v in seconds.items())
    summary = [
        f"dataset: {args.dataset} ({args.data.name}); train on {unit_name} "
        f"0..{args.train_units - 1}, evaluate on {held_label}",
        f"training pairs: {len(pairs)} from {len(pool)} training turns, generated by {generator}",
        f"trainer: {run.trainer}, epochs {plan.epochs}, batch {plan.batch_size}, "
        f"hard negatives {plan.hard_negatives}, run {run.run_id}",
        f"pipeline's own evaluate stage: {gate}",
        f"deployed: finetuned:<registry> serves {served} (active checkpoint "
        f"{active.get('checkpoint_id')})",
        f"memvault search: add_many + search(limit=10), backend {args.backend}; {timings}",
    ]
    print("\n".join(summary))
    for preset, table in tables.items():
        print(f"\npreset {preset}:")
        print(_table(table))
    print()
    print(_table(stage_rows))
    total = time.perf_counter() - overall_started
    print(f"\npipeline {pipeline_seconds:.1f}s, everything {total:.1f}s")
    if args.markdown is not None:
        title = "LoCoMo" if args.dataset == "locomo" else "LongMemEval_S (dev 100)"
        text = [
            f"## {title}: base vs deployed fine-tuned embedder in memvault search",
            "",
            *(f"- {line}" for line in summary),
            "",
        ]
        for preset, table in tables.items():
            text += [f"Preset `{preset}`:", "", _markdown(table), ""]
        text += [
            "Stage times (this 2-core machine):",
            "",
            _markdown(stage_rows),
            "",
            f"Pipeline {pipeline_seconds:.1f}s; whole run {total:.1f}s.",
            "",
        ]
        args.markdown.write_text("\n".join(text), encoding="utf-8")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "dataset": args.dataset,
                    "train_queries": args.train_queries,
                    "run": run.model_dump(mode="json"),
                    # The first preset's pair (default: the default preset) ...
                    "base": b.to_json(),
                    "fine_tuned": reports[presets[0]]["fine-tuned"].to_json(),
                    # ... and every preset's.
                    "presets": {
                        preset: {name: r.to_json() for name, r in pair.items()}
                        for preset, pair in reports.items()
                    },
                    "seconds": seconds,
                },
                indent=2,
                default=str,
            ),
            encoding="utf-8",
        )


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
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="Train on a part of the dataset, deploy, and compare base vs fine-tuned in "
        "memvault's own search (default preset, limit 10) on the held-out rest.",
    )
    parser.add_argument(
        "--train-units",
        type=int,
        default=None,
        help="--end-to-end: LoCoMo conversations / LongMemEval questions to train on, from the "
        "start of the file (default 5 / 50); the rest is held out.",
    )
    parser.add_argument(
        "--train-queries",
        choices=["synthetic", "gold"],
        default="synthetic",
        help="--end-to-end: training queries written from the training turns (no LLM), or the "
        "training part's own questions.",
    )
    parser.add_argument(
        "--held-out-units",
        type=int,
        default=None,
        help="--end-to-end: evaluate only this many held-out conversations / questions (the "
        "first after the training part; default all).",
    )
    parser.add_argument(
        "--synthetic-docs",
        choices=["train", "all"],
        default="train",
        help="--end-to-end with synthetic queries: write them from the training part's turns "
        "only, or from every turn (the held-out documents too, never their questions).",
    )
    parser.add_argument(
        "--train-max-passages",
        type=int,
        default=3000,
        help="--end-to-end: cap on training turns (seeded sample; the mine stage embeds each).",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=["sqlite", "memory"], default="sqlite")
    parser.add_argument(
        "--presets",
        default="default",
        help="--end-to-end: comma-separated retrieval presets to compare under (e.g. "
        "default,dense: 'dense' shows the embedder alone, 'default' what users get).",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memvault-ft-embcache",
        help="--end-to-end: disk cache of base-model vectors.",
    )
    parser.add_argument("--markdown", type=Path, default=None, help="--end-to-end: write here.")
    args = parser.parse_args()
    if args.end_to_end:
        if args.train_units is None:
            args.train_units = 5 if args.dataset == "locomo" else 50
        await end_to_end(args)
        return

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
        rolled = await manager.rollback_checkpoint(
            "base", actor="bench", confirm=True, reason="benchmark rollback check"
        )
        after = create_embedder(spec).model_id
        again = await manager.rollback_checkpoint(
            str(run.checkpoint_id), actor="bench", confirm=True, reason="benchmark redeploy"
        )
        rollback.update(
            served_after_deploy=served,
            served_after_rollback=after,
            rollback_record=rolled.checkpoint_id,
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

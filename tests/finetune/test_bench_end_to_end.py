"""``benchmarks/bench_finetune.py --end-to-end``: synthetic training queries and the full run
(train on one conversation, deploy, base vs deployed in memvault's own LoCoMo search)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memvault.embeddings import MINILM_MODEL_ID

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    """A script of ``benchmarks/`` (not a package), loaded from its file."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench = _load("bench_finetune")


def test_extractive_queries_use_speaker_and_rarest_words() -> None:
    passages = [
        "Alice: I adopted a greyhound puppy named Biscuit at the shelter yesterday.",
        "Bob: The shelter was busy yesterday, lots of people adopting.",
        "Alice: Sure!",  # too few content words: no queries
        "user: My sister Clara moved to Lisbon for a conservatory position.",
        "assistant: Lisbon has a lovely conservatory scene and mild winters.",
    ]
    pairs = bench.extractive_queries(passages)
    by_passage: dict[str, list[str]] = {}
    for p in pairs:
        by_passage.setdefault(p["passage"], []).append(p["query"])
    assert "Alice: Sure!" not in by_passage
    assert len(pairs) == 8  # two per remaining passage
    first = by_passage[passages[0]]
    # 'shelter' and 'yesterday' occur in two passages, the rest once: the rarest come first
    # (ties in passage order), and the question keeps passage order.
    assert first[0] == "What did Alice say about adopted greyhound puppy?"
    assert sorted(first[1].split()) == ["adopted", "greyhound", "named", "puppy"]
    assert by_passage[passages[3]][0].startswith("What did I say about ")
    assert by_passage[passages[4]][0].startswith("What did you say about ")
    # Deterministic for a seed.
    assert bench.extractive_queries(passages) == pairs


def _conversation(sample: str, people: tuple[str, str], facts: list[str]) -> dict[str, Any]:
    turns = [
        {"speaker": people[i % 2], "dia_id": f"D1:{i + 1}", "text": fact}
        for i, fact in enumerate(facts)
    ]
    return {
        "sample_id": sample,
        "conversation": {
            "speaker_a": people[0],
            "speaker_b": people[1],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [
            {
                "question": f"What did {people[i % 2]} mention about {fact.split()[-2]}?",
                "answer": "x",
                "evidence": [f"D1:{i + 1}"],
                "category": 4,
            }
            for i, fact in enumerate(facts)
        ],
    }


FACTS_A = [
    "I adopted a greyhound puppy named Biscuit from the county shelter.",
    "My cello teacher says the recital piece needs steadier bowing practice.",
    "We drove along the coastal highway and camped beside lighthouse cliffs.",
    "The bakery downtown sells sourdough loaves with rosemary and olives.",
    "Our marathon training plan adds hill repeats every Thursday evening.",
    "I repaired the greenhouse roof after hailstones cracked several panels.",
]
FACTS_B = [
    "My sister Clara accepted a teaching job in Lisbon this September.",
    "The pottery studio fired my glazed bowls in their wood kiln.",
    "I volunteer at the food pantry sorting canned vegetables weekly.",
    "We watched meteor showers from the desert observatory last August.",
    "My grandfather taught me chess openings using his walnut board.",
    "The community garden finally harvested pumpkins and heirloom tomatoes.",
]


def _two_conversations(tmp_path: Path) -> Path:
    data = tmp_path / "locomo.json"
    data.write_text(
        json.dumps(
            [
                _conversation("conv-a", ("Alice", "Bob"), FACTS_A),
                _conversation("conv-b", ("Cara", "Dan"), FACTS_B),
            ]
        ),
        encoding="utf-8",
    )
    return data


def _args(tmp_path: Path, data: Path, **overrides: Any) -> argparse.Namespace:
    fields: dict[str, Any] = dict(
        dataset="locomo",
        data=data,
        trainer="adapter",
        epochs=3,
        batch_size=4,
        learning_rate=None,
        hard_negatives=2,
        registry=tmp_path / "registry",
        json=tmp_path / "e2e.json",
        train_units=1,
        train_queries="synthetic",
        synthetic_docs="train",
        train_max_passages=3000,
        seed=0,
        backend="sqlite",
        presets="default",
        cache_dir=tmp_path / "cache",
        markdown=tmp_path / "e2e.md",
    )
    fields.update(overrides)
    return argparse.Namespace(**fields)


def test_end_to_end_trains_deploys_and_compares_in_memvault_search(tmp_path: Path) -> None:
    data = _two_conversations(tmp_path)
    markdown = tmp_path / "e2e.md"
    out = tmp_path / "e2e.json"
    asyncio.run(bench.end_to_end(_args(tmp_path, data, presets="default,dense")))

    result = json.loads(out.read_text("utf-8"))
    run = result["run"]
    assert run["status"] == "completed" and run["deployed"] is True
    assert run["plan"]["require_improvement"] is False
    # Trained on conversation 0 only (synthetic pairs from its six turns), evaluated on 1.
    pairs = [
        json.loads(line)
        for line in (tmp_path / "registry-pairs.jsonl").read_text("utf-8").splitlines()
    ]
    assert {p["passage"].split(":")[0] for p in pairs} == {"Alice", "Bob"}
    assert len(pairs) == 12
    base, fine_tuned = result["base"], result["fine_tuned"]
    assert base["questions"] == fine_tuned["questions"] == len(FACTS_B)
    assert base["embedder"] == MINILM_MODEL_ID  # the plan's base model (L6 unless named)
    assert fine_tuned["embedder"].startswith(base["embedder"] + "+ft-")
    assert fine_tuned["embedder"].endswith(run["checkpoint_id"])
    assert base["limit"] == fine_tuned["limit"] == 10 and base["preset"] == "default"
    # Every preset compares the same two embedders on the same held-out questions.
    assert list(result["presets"]) == ["default", "dense"]
    dense = result["presets"]["dense"]
    assert dense["base"]["preset"] == dense["fine-tuned"]["preset"] == "dense"
    assert dense["fine-tuned"]["embedder"] == fine_tuned["embedder"]
    text = markdown.read_text("utf-8")
    assert "Preset `default`:" in text and "Preset `dense`:" in text
    assert text.count("| overall | 6 |") == 2
    assert "generated by bench_finetune.extractive_queries (no LLM)" in text
    assert "train on conversations 0..0, evaluate on conversations 1..1" in text
    # The base vectors were cached on disk for the next run.
    assert list((tmp_path / "cache").glob("vectors-*.npz"))


def _pairs(tmp_path: Path) -> list[dict[str, str]]:
    lines = (tmp_path / "registry-pairs.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_synthetic_queries_from_every_turn_never_use_held_out_questions(tmp_path: Path) -> None:
    data = _two_conversations(tmp_path)
    asyncio.run(bench.end_to_end(_args(tmp_path, data, synthetic_docs="all")))
    pairs = _pairs(tmp_path)
    # The held-out conversation's turns get synthetic queries too ...
    assert {p["passage"].split(":")[0] for p in pairs} == {"Alice", "Bob", "Cara", "Dan"}
    assert len(pairs) == 24
    # ... but none of its questions is among them.
    questions = {q["question"] for q in json.loads(data.read_text("utf-8"))[1]["qa"]}
    assert not questions & {p["query"] for p in pairs}
    assert "held-out turns included" in (tmp_path / "e2e.md").read_text("utf-8")


def test_gold_mode_trains_on_the_training_part_questions_only(tmp_path: Path) -> None:
    data = _two_conversations(tmp_path)
    asyncio.run(bench.end_to_end(_args(tmp_path, data, train_queries="gold")))
    raw = json.loads(data.read_text("utf-8"))
    assert {p["query"] for p in _pairs(tmp_path)} == {q["question"] for q in raw[0]["qa"]}
    assert "own gold questions" in (tmp_path / "e2e.md").read_text("utf-8")


def test_held_out_units_evaluates_only_the_first_held_out_conversations(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(
        json.dumps(
            [
                _conversation("conv-a", ("Alice", "Bob"), FACTS_A),
                _conversation("conv-b", ("Cara", "Dan"), FACTS_B),
                _conversation("conv-c", ("Eve", "Finn"), FACTS_A[:3] + FACTS_B[:2]),
            ]
        ),
        encoding="utf-8",
    )
    asyncio.run(bench.end_to_end(_args(tmp_path, data, held_out_units=1)))
    result = json.loads((tmp_path / "e2e.json").read_text("utf-8"))
    assert result["base"]["questions"] == result["fine_tuned"]["questions"] == len(FACTS_B)
    assert result["base"]["conversations"] == 1
    assert "evaluate on conversations 1..1 (1, 6 questions)" in (tmp_path / "e2e.md").read_text(
        "utf-8"
    )


def test_end_to_end_refuses_to_hold_out_nothing(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_conversation("conv-a", ("Alice", "Bob"), FACTS_A)]), "utf-8")
    args = argparse.Namespace(dataset="locomo", data=data, train_units=1)
    with pytest.raises(SystemExit, match="leaves no held-out conversations"):
        asyncio.run(bench.end_to_end(args))

"""The fine-tune pipeline end to end on CPU: stages, LLM generation, cancel/resume, runners."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from memvault.embeddings import MINILM_MODEL_ID, OnnxMiniLMEmbedder, create_embedder
from memvault.embeddings.adapter import AdapterEmbedder
from memvault.errors import (
    EmbeddingModelChangedError,
    FineTuneCancelledError,
    FineTuneDependencyError,
    MemoryConflictError,
    MemoryError,
    MemoryValidationError,
)
from memvault.finetune import (
    FineTuneManager,
    FineTunePlan,
    RunStatus,
    Stage,
    StageStatus,
    SubprocessRunner,
)
from memvault.finetune.pipeline import chunk_document, load_documents
from memvault.llm.scripted import ScriptedLLM
from memvault.memory import Memory
from memvault.models import ChatMessage


def _plan(pairs_file: Path, **kw: object) -> FineTunePlan:
    return FineTunePlan(pairs_file=str(pairs_file), trainer="adapter", **kw)  # type: ignore[arg-type]


async def test_full_pipeline_trains_evaluates_and_deploys(
    pairs_file: Path, registry: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memvault.finetune")
    manager = FineTuneManager(registry=registry)
    run = await manager.start(_plan(pairs_file), wait=True)
    assert run.status is RunStatus.COMPLETED
    assert [s.status for s in run.stages] == [StageStatus.COMPLETED] * 5
    assert all(s.seconds is not None for s in run.stages)
    assert run.trainer == "adapter"
    gen = run.stage(Stage.GENERATE).summary
    assert (gen["passages"], gen["pairs"], gen["source"]) == (48, 96, "pairs_file")
    assert gen["val_pairs"] == 20  # 10 of 48 passages held out, 2 queries each
    train = run.stage(Stage.TRAIN).summary
    assert train["steps"] == 9 and train["temperature"] == 0.02  # 3 epochs of ceil(76 / 32)
    assert train["epoch_losses"][-1] < train["epoch_losses"][0]
    m = run.metrics
    assert m is not None and m.queries == 20 and m.passages == 48
    # The jargon-to-plain mapping learnt on 38 passages carries over to the 10 held-out ones.
    assert m.checkpoint_ndcg_at_10 > m.base_ndcg_at_10 + 0.03
    assert run.deployed
    # Start and complete markers for every stage, in order.
    events = [
        (r.event, r.stage)  # type: ignore[attr-defined]
        for r in caplog.records
        if getattr(r, "event", "").startswith("memory.fine_tune.stage_")
    ]
    expected = []
    for stage in Stage:
        expected += [
            ("memory.fine_tune.stage_start", stage.value),
            ("memory.fine_tune.stage_complete", stage.value),
        ]
    assert events == expected
    listed, total = await manager.list_runs()
    assert total == 1 and listed[0].run_id == run.run_id


async def test_deployed_checkpoint_is_the_active_embedder_and_needs_reindex(
    pairs_file: Path, registry: Path, tmp_path: Path
) -> None:
    manager = FineTuneManager(registry=registry)
    run = await manager.start(_plan(pairs_file, require_improvement=False), wait=True)
    assert run.deployed and run.checkpoint_id
    active = await manager.get_active_embedder()
    assert active.checkpoint_id == run.checkpoint_id
    assert active.model_id == f"{MINILM_MODEL_ID}+ft-{run.checkpoint_id}"
    embedder = create_embedder(f"finetuned:{registry}")
    assert isinstance(embedder, AdapterEmbedder)
    assert embedder.model_id == active.model_id
    vector = embedder.embed_query("kelp token rotation for zeta-0")
    assert vector.shape == (384,)
    assert abs(float((vector**2).sum()) - 1.0) < 1e-5
    # A store built with the base model refuses the checkpoint until it is re-embedded.
    db = str(tmp_path / "store.db")
    with Memory(db) as mem:
        mem.add("the frobnicator quorum of zeta-0 is 0", agent_id="a")
    with pytest.raises(EmbeddingModelChangedError), Memory(db, embedder=embedder) as mem:
        mem.search("frobnicator", agent_id="a")


async def test_no_improvement_is_not_deployed_when_required(
    pairs_file: Path, registry: Path
) -> None:
    # One epoch at a tiny learning rate leaves the adapter at (almost exactly) the identity.
    plan = _plan(pairs_file, epochs=1, adapter_learning_rate=1e-9)
    run = await FineTuneManager(registry=registry).start(plan, wait=True)
    assert run.status is RunStatus.COMPLETED
    assert run.deployed is False
    assert run.stage(Stage.DEPLOY).status is StageStatus.SKIPPED
    assert "does not beat" in str(run.stage(Stage.DEPLOY).summary["reason"])
    assert not (registry / "active.json").exists()
    assert isinstance(create_embedder("minilm"), OnnxMiniLMEmbedder)


async def test_cancel_mid_training_then_resume(pairs_file: Path, registry: Path) -> None:
    seen: list[tuple[str, Stage, int, int]] = []
    manager: FineTuneManager

    def progress(run_id: str, stage: Stage, done: int, total: int) -> None:
        seen.append((run_id, stage, done, total))
        if stage is Stage.TRAIN and done == 1 and len([s for s in seen if s[1] is stage]) == 2:
            # A second operator cancels while the trainer is between batches.
            manager._store.request_cancel(run_id)

    manager = FineTuneManager(registry=registry, progress=progress)
    with pytest.raises(FineTuneCancelledError) as info:
        await manager.start(_plan(pairs_file, batch_size=8), wait=True)
    assert info.value.stage == "train"
    status = await manager.status()
    run = status.run
    assert run is not None and run.status is RunStatus.CANCELLED
    assert run.stage(Stage.MINE).status is StageStatus.COMPLETED
    assert run.stage(Stage.TRAIN).status is StageStatus.CANCELLED
    mined_at = run.stage(Stage.MINE).completed_at
    assert not (registry / "checkpoints").exists() or not any((registry / "checkpoints").iterdir())

    resumed = await manager.resume(run.run_id, wait=True)
    assert resumed.status is RunStatus.COMPLETED
    assert resumed.stage(Stage.MINE).completed_at == mined_at  # not run again
    assert resumed.stage(Stage.TRAIN).status is StageStatus.COMPLETED
    with pytest.raises(MemoryConflictError, match="already completed"):
        await manager.resume(run.run_id)


async def test_cancel_needs_the_guardrail_and_reports_the_run(
    pairs_file: Path, registry: Path
) -> None:
    manager = FineTuneManager(registry=registry)
    assert await manager.cancel(actor="ops", confirm=True, reason="nothing runs") is None
    for kwargs in (
        {"actor": "ops", "confirm": False, "reason": "r"},
        {"actor": "ops", "confirm": True, "reason": "  "},
        {"actor": " ", "confirm": True, "reason": "r"},
    ):
        with pytest.raises(MemoryValidationError):
            await manager.cancel(**kwargs)  # type: ignore[arg-type]
    run = await manager.start(_plan(pairs_file), wait=False)
    cancelled = await manager.cancel(actor="ops", confirm=True, reason="wrong corpus")
    assert cancelled == run.run_id
    with pytest.raises(FineTuneCancelledError):
        await manager.wait()
    audit = [json.loads(x) for x in (registry / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["operation"] == "cancel"
    assert (audit[-1]["actor"], audit[-1]["reason"], audit[-1]["target_id"]) == (
        "ops",
        "wrong corpus",
        run.run_id,
    )


async def test_one_run_at_a_time(pairs_file: Path, registry: Path) -> None:
    manager = FineTuneManager(registry=registry)
    await manager.start(_plan(pairs_file), wait=False)
    with pytest.raises(MemoryConflictError, match="still running"):
        await manager.start(_plan(pairs_file))
    final = await manager.wait()
    assert final is not None and final.status is RunStatus.COMPLETED


def _llm_reply(messages: list[ChatMessage]) -> str:
    body = messages[-1].content
    words = [w.strip(".,") for w in body.split() if "-" in w]
    name = words[0] if words else "it"
    return json.dumps(
        {"queries": [f"what exactly runs at {name} and who owns it today", f"settings of {name}"]}
    )


async def test_generation_through_the_llm_with_caps(
    docs_dir: Path, registry: Path, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM([_llm_reply], repeat_last=True)
    plan = FineTunePlan(
        source_dir=str(docs_dir),
        trainer="adapter",
        llm_max_tokens=64,
        llm_max_input_chars=200,
        query_max_tokens=8,
        deploy=False,
    )
    caplog.set_level(logging.WARNING, logger="memvault.finetune")
    run = await FineTuneManager(registry=registry, llm=llm).start(plan, wait=True)
    assert run.status is RunStatus.COMPLETED
    assert len(llm.calls) == 3  # one call per passage (the .png is not a document)
    assert all(kw["max_tokens"] == 64 for kw in llm.call_kwargs)
    assert all(len(call[-1].content) <= 200 for call in llm.calls)
    assert run.stage(Stage.GENERATE).summary["pairs"] == 6
    events = {getattr(r, "event", None) for r in caplog.records}
    # The long leases passage was cut for the prompt, and 8-token queries are capped.
    assert "memory.fine_tune.generation_truncated" in events
    assert "memory.fine_tune.encode_truncation_likely" in events
    assert run.stage(Stage.DEPLOY).summary == {
        "deployed": False,
        "reason": "the plan has deploy: false",
    }


async def test_generation_without_llm_fails_preflight(docs_dir: Path, registry: Path) -> None:
    manager = FineTuneManager(registry=registry)
    plan = FineTunePlan(source_dir=str(docs_dir), trainer="adapter")
    result = await manager.preflight(plan)
    assert not result.ok
    assert any("no LLM provider" in p for p in result.problems())
    with pytest.raises(MemoryValidationError, match="preflight failed: llm"):
        await manager.start(plan)
    missing = await manager.preflight(FineTunePlan(source_dir=str(docs_dir / "nope")))
    assert any("is not a directory" in p for p in missing.problems())


def test_documents_are_chunked_into_passages(docs_dir: Path) -> None:
    passages = dict(load_documents(docs_dir))
    assert sorted(passages) == ["adr/0001-leases.md#0", "notes.rst#0", "runbook.txt#0"]
    assert passages["adr/0001-leases.md#0"].startswith("# Leases Every service")
    long_text = "\n\n".join(" ".join(["word"] * 50) for _ in range(5))
    assert [len(c.split()) for c in chunk_document(long_text)] == [100, 100, 50]


async def test_subprocess_runner_runs_the_stages_in_a_child(
    pairs_file: Path, registry: Path
) -> None:
    seen: set[Stage] = set()
    manager = FineTuneManager(
        registry=registry,
        runner=SubprocessRunner(),
        progress=lambda run_id, stage, done, total: seen.add(stage),
    )
    run = await manager.start(_plan(pairs_file), wait=True)
    assert run.status is RunStatus.COMPLETED
    assert seen >= {Stage.MINE, Stage.TRAIN}  # relayed from the child's PROGRESS markers
    config = json.loads((registry / "runs" / run.run_id / "config.json").read_text())
    assert config["stages"] == ["mine", "train", "evaluate", "deploy"]


async def test_subprocess_runner_falls_back_in_process(
    pairs_file: Path, registry: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memvault.finetune")
    runner = SubprocessRunner(python=str(Path(sys.executable).parent / "no-such-python"))
    run = await FineTuneManager(registry=registry, runner=runner).start(
        _plan(pairs_file), wait=True
    )
    assert run.status is RunStatus.COMPLETED
    assert "memory.fine_tune.runner_fallback" in {getattr(r, "event", None) for r in caplog.records}


async def test_missing_torch_is_a_dependency_error(
    pairs_file: Path, registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry in sys.modules makes `import torch` fail exactly as when it is not installed.
    monkeypatch.setitem(sys.modules, "torch", None)
    manager = FineTuneManager(registry=registry)
    plan = FineTunePlan(pairs_file=str(pairs_file), trainer="biencoder")
    result = await manager.preflight(plan)
    assert any("pip install 'memvault[finetune]'" in p for p in result.problems())
    with pytest.raises(FineTuneDependencyError) as info:
        await manager.start(plan)
    assert info.value.install_command == "pip install 'memvault[finetune]'"
    assert isinstance(info.value, MemoryError)
    # auto falls back to the adapter trainer when torch is unavailable.
    auto = await manager.preflight(FineTunePlan(pairs_file=str(pairs_file)))
    assert auto.trainer == "adapter" and auto.ok


async def test_memories_join_the_pool_without_duplicating_pair_passages(
    pairs_file: Path, registry: Path
) -> None:
    first = json.loads(pairs_file.read_text().splitlines()[0])["passage"]

    async def memories() -> list[tuple[str, str]]:
        # A store's copy of a pair passage (with the trailing newline a memory may keep) and
        # one unrelated memory that only serves as a distractor.
        return [("mem-1", first + "\n"), ("mem-2", "Lunch is served at noon on Fridays.")]

    manager = FineTuneManager(registry=registry, passage_source=memories)
    run = await manager.start(_plan(pairs_file, deploy=False), wait=True)
    summary = run.stage(Stage.GENERATE).summary
    assert (summary["passages"], summary["pairs"]) == (49, 96)
    passages = (registry / "runs" / run.run_id / "generate" / "passages.jsonl").read_text()
    assert '"id": "mem-1"' in passages and '"id": "mem-2"' in passages

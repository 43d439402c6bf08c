"""The fine-tune lifecycle: start, resume, status, cancel, preflight, runs, checkpoints, rollback.

:class:`FineTuneManager` is what ``MemoryService`` (REST ``/admin/memory/fine-tune``, MCP) and
the ``memvault finetune`` CLI call. It owns one checkpoint registry (``fine_tune.checkpoint_path``)
and runs at most one pipeline at a time per manager. The generate stage runs in this process
(it needs the configured :class:`~memvault.protocols.LLMProvider`); the other stages run through
the configured runner (in process, or a child process with in-process fallback).

Destructive operations (``cancel``, ``rollback_checkpoint``) take the guardrail triple: a
non-blank ``actor``, a literal ``confirm=True`` and a non-blank ``reason``; each one is appended
to the registry's ``audit.jsonl`` and logged as ``memory.fine_tune.admin_op_executed``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from memvault.embeddings.adapter import read_active
from memvault.errors import (
    FineTuneCancelledError,
    MemoryConfigError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.finetune.config import (
    ActiveEmbedderSnapshot,
    CheckpointRecord,
    EmbeddingFineTuneConfig,
    FineTunePlan,
    FineTuneRun,
    FineTuneStatus,
    PreflightCheck,
    PreflightResult,
    RunStatus,
    Stage,
    StageRecord,
    StageStatus,
    check_safe_path,
)
from memvault.finetune.pipeline import (
    DOC_SUFFIXES,
    RunContext,
    finish,
    generate,
    pending_stages,
    resolve_trainer,
    run_stage_async,
    torch_available,
)
from memvault.finetune.runner import InProcessRunner, StageRunner, SubprocessRunner
from memvault.finetune.state import (
    BASE_CHECKPOINT,
    RunStore,
    activate,
    append_audit,
    checkpoints_dir,
    list_checkpoints,
)
from memvault.protocols import LLMProvider

__all__ = ["FineTuneManager", "FineTuneProgress", "PassageSource"]

logger = logging.getLogger(__name__)

FineTuneProgress = Callable[[str, Stage, int, int], None]
"""``progress(run_id, stage, done, total)``."""

PassageSource = Callable[[], Awaitable[Sequence[tuple[str, str]]]]
"""Returns extra ``(passage id, text)`` pairs to fine-tune on (e.g. a store's memories)."""

_MAX_PAGE = 1000


def _check_guardrail(actor: str, confirm: object, reason: str | None, what: str) -> str:
    if not isinstance(actor, str) or not actor.strip():
        raise MemoryValidationError(f"{what} needs a non-blank actor")
    if confirm is not True:
        raise MemoryValidationError(
            f"{what} is destructive: confirm it (confirm=True; --yes on the command line)"
        )
    if reason is None or not isinstance(reason, str) or not reason.strip():
        raise MemoryValidationError(f"{what} needs a non-blank reason")
    if len(reason) > 500:
        raise MemoryValidationError("reason must be at most 500 characters")
    return reason.strip()


class FineTuneManager:
    """Runs and administers embedding fine-tunes over one checkpoint registry (module doc)."""

    def __init__(
        self,
        config: EmbeddingFineTuneConfig | None = None,
        *,
        registry: str | os.PathLike[str] | None = None,
        llm: LLMProvider | None = None,
        runner: StageRunner | str | None = None,
        passage_source: PassageSource | None = None,
        progress: FineTuneProgress | None = None,
        actor: str = "fine-tune",
    ) -> None:
        """Bind to ``registry`` (default: ``config.checkpoint_path``).

        Raises:
            MemoryConfigError: no registry directory is given by either.
        """
        self._config = config or EmbeddingFineTuneConfig()
        root = registry if registry is not None else self._config.checkpoint_path
        if root is None:
            raise MemoryConfigError(
                "fine-tuning needs a checkpoint registry: set memory.fine_tune.checkpoint_path"
            )
        if isinstance(root, str):
            check_safe_path(root, "checkpoint_path")
        self._registry = Path(root).expanduser()
        self._store = RunStore(self._registry)
        self._llm = llm
        if runner is None:
            runner = self._config.runner
        if isinstance(runner, str):
            if runner not in ("in-process", "subprocess"):
                raise MemoryConfigError(f"unknown fine-tune runner {runner!r}")
            runner = InProcessRunner() if runner == "in-process" else SubprocessRunner()
        self._runner: StageRunner = runner
        self._passage_source = passage_source
        self._progress_cb = progress
        self._actor = actor
        self._task: asyncio.Task[FineTuneRun] | None = None
        self._active_run: str | None = None
        self._progress: tuple[Stage | None, int, int] = (None, 0, 0)

    @property
    def registry(self) -> Path:
        """The checkpoint registry directory."""
        return self._registry

    # -- plans ------------------------------------------------------------------------------------

    def _complete_plan(self, plan: FineTunePlan) -> FineTunePlan:
        """Fill what the plan leaves to the configuration (data dir, base model)."""
        update: dict[str, Any] = {}
        if "base_model" not in plan.model_fields_set and self._config.base_model:
            update["base_model"] = self._config.base_model
        if plan.source_dir is None and self._config.training_data_dir and plan.pairs_file is None:
            update["source_dir"] = self._config.training_data_dir
        return plan.model_copy(update=update) if update else plan

    async def preflight(self, plan: FineTunePlan) -> PreflightResult:
        """Check that ``plan`` can run here: data, registry writability, trainer, LLM, model."""
        plan = self._complete_plan(plan)
        return await asyncio.to_thread(self._preflight_sync, plan)

    def _preflight_sync(self, plan: FineTunePlan) -> PreflightResult:
        checks: list[PreflightCheck] = []
        if plan.source_dir is not None:
            src = Path(plan.source_dir).expanduser()
            docs = (
                [p for p in src.rglob("*") if p.suffix.lower() in DOC_SUFFIXES and p.is_file()]
                if src.is_dir()
                else []
            )
            checks.append(
                PreflightCheck(
                    name="source_dir",
                    ok=bool(docs) or plan.pairs_file is not None,
                    detail=f"{len(docs)} document(s) in {src}"
                    if src.is_dir()
                    else f"{src} is not a directory",
                )
            )
        if plan.pairs_file is not None:
            pf = Path(plan.pairs_file).expanduser()
            checks.append(
                PreflightCheck(
                    name="pairs_file",
                    ok=pf.is_file(),
                    detail=str(pf) if pf.is_file() else f"{pf} does not exist",
                )
            )
        else:
            checks.append(
                PreflightCheck(
                    name="llm",
                    ok=self._llm is not None,
                    detail=f"queries generated by {self._llm.model_id}"
                    if self._llm is not None
                    else "no LLM provider configured and no pairs_file: nothing writes queries",
                )
            )
        try:
            self._registry.mkdir(parents=True, exist_ok=True)
            probe = self._registry / ".preflight"
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
            checks.append(PreflightCheck(name="output_dir", ok=True, detail=str(self._registry)))
        except OSError as exc:
            checks.append(
                PreflightCheck(name="output_dir", ok=False, detail=f"not writable: {exc}")
            )
        trainer = resolve_trainer(plan)
        if trainer == "biencoder":
            has_torch = torch_available()
            from memvault.finetune.torch_trainer import FINETUNE_INSTALL_COMMAND

            checks.append(
                PreflightCheck(
                    name="trainer",
                    ok=has_torch,
                    detail="biencoder (torch)"
                    if has_torch
                    else f"biencoder needs torch: {FINETUNE_INSTALL_COMMAND}",
                )
            )
            # L6's package ships the weights the trainer needs; L3's ships only an ONNX graph.
            if plan.base_model.strip().lower() not in ("minilm", "default", "minilm-numpy"):
                checks.append(
                    PreflightCheck(
                        name="base_model",
                        ok=False,
                        detail="the biencoder trainer fine-tunes the bundled MiniLM only; use "
                        "trainer: adapter for other base models",
                    )
                )
        else:
            checks.append(PreflightCheck(name="trainer", ok=True, detail="adapter (numpy)"))
        try:
            from memvault.embeddings import create_embedder

            base = create_embedder(plan.base_model)
            checks.append(PreflightCheck(name="base_model", ok=True, detail=base.model_id))
        except MemoryConfigError as exc:
            checks.append(PreflightCheck(name="base_model", ok=False, detail=str(exc)))
        return PreflightResult(ok=all(c.ok for c in checks), checks=tuple(checks), trainer=trainer)

    # -- running ----------------------------------------------------------------------------------

    def _busy(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(
        self, plan: FineTunePlan, *, wait: bool = False, actor: str | None = None
    ) -> FineTuneRun:
        """Start a run of ``plan``; returns its state (final when ``wait``, else just started).

        Raises:
            MemoryConflictError: this manager is already running a pipeline.
            MemoryValidationError: preflight failed (the message lists every problem).
            FineTuneDependencyError, FineTuneCancelledError: with ``wait``, what the run raised.
        """
        if self._busy():
            raise MemoryConflictError(f"fine-tune run {self._active_run} is still running")
        plan = self._complete_plan(plan)
        result = await self.preflight(plan)
        if not result.ok:
            if any(c.name == "trainer" and not c.ok for c in result.checks):
                from memvault.finetune.torch_trainer import require_torch

                require_torch()  # raises FineTuneDependencyError with the install command
            raise MemoryValidationError(
                "fine-tune preflight failed: " + "; ".join(result.problems())
            )
        run = await asyncio.to_thread(self._store.create, plan)
        return await self._launch(run.run_id, wait=wait, actor=actor)

    async def resume(
        self, run_id: str, *, wait: bool = False, actor: str | None = None
    ) -> FineTuneRun:
        """Resume a failed or cancelled run from its first unfinished stage.

        Raises:
            MemoryNotFoundError: no such run.
            MemoryConflictError: a run is active, or this one already completed.
        """
        if self._busy():
            raise MemoryConflictError(f"fine-tune run {self._active_run} is still running")
        run = await asyncio.to_thread(self._store.load, run_id)
        if run.status is RunStatus.COMPLETED:
            raise MemoryConflictError(f"fine-tune run {run_id} already completed")
        self._store.clear_cancel(run_id)
        stages = tuple(
            s
            if s.status in (StageStatus.COMPLETED, StageStatus.SKIPPED)
            else StageRecord(stage=s.stage)
            for s in run.stages
        )
        self._store.save(run.model_copy(update={"stages": stages, "error": None}))
        return await self._launch(run_id, wait=wait, actor=actor)

    async def _launch(self, run_id: str, *, wait: bool, actor: str | None) -> FineTuneRun:
        self._active_run = run_id
        self._progress = (None, 0, 0)
        self._task = asyncio.create_task(self._execute(run_id, actor or self._actor))
        if wait:
            return await self._task
        return self._store.load(run_id)

    def _on_progress(self, run_id: str) -> Callable[[Stage, int, int], None]:
        def update(stage: Stage, done: int, total: int) -> None:
            self._progress = (stage, done, total)
            if self._progress_cb is not None:
                self._progress_cb(run_id, stage, done, total)

        return update

    async def _execute(self, run_id: str, actor: str) -> FineTuneRun:
        extra: Sequence[tuple[str, str]] = ()
        if self._passage_source is not None:
            extra = await self._passage_source()
        ctx = RunContext(
            store=self._store,
            run_id=run_id,
            registry=self._registry,
            progress=self._on_progress(run_id),
            llm=self._llm,
            extra_passages=extra,
            actor=actor,
        )
        run = self._store.load(run_id)
        self._store.save(run.model_copy(update={"status": RunStatus.RUNNING}))
        try:
            todo = pending_stages(run)
            if Stage.GENERATE in todo:
                plan = run.plan
                await run_stage_async(ctx, Stage.GENERATE, lambda: generate(ctx, plan))
                todo.remove(Stage.GENERATE)
            if todo:
                await self._runner.run(ctx, todo)
        except FineTuneCancelledError as exc:
            await asyncio.to_thread(finish, ctx, RunStatus.CANCELLED, str(exc))
            raise
        except Exception as exc:
            await asyncio.to_thread(finish, ctx, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            logger.warning(
                "memory.fine_tune.run_failed run_id=%s error=%s",
                run_id,
                exc,
                extra={"event": "memory.fine_tune.run_failed", "run_id": run_id},
            )
            raise
        finally:
            self._active_run = None
        return await asyncio.to_thread(finish, ctx, RunStatus.COMPLETED)

    async def wait(self) -> FineTuneRun | None:
        """Wait for the active run (if any) and return its final state (errors re-raised)."""
        if self._task is None:
            return None
        return await self._task

    # -- inspecting -------------------------------------------------------------------------------

    async def status(self, run_id: str | None = None) -> FineTuneStatus:
        """A snapshot of ``run_id``, else of the active run, else of the most recent run."""
        active = self._active_run
        target = run_id or active
        if target is None:
            runs = await asyncio.to_thread(self._store.list)
            if not runs:
                return FineTuneStatus(active=False, run=None)
            target = runs[0].run_id
        run = await asyncio.to_thread(self._store.load, target)
        is_active = target == active or (active is None and run.status is RunStatus.RUNNING)
        stage, done, total = self._progress if target == active else (None, 0, 0)
        if stage is None and run.status is RunStatus.RUNNING:
            stage = next((s.stage for s in run.stages if s.status is StageStatus.RUNNING), None)
        return FineTuneStatus(
            active=is_active,
            run=run,
            current_stage=stage,
            progress_done=done,
            progress_total=total,
        )

    async def list_runs(
        self, *, limit: int = 20, offset: int = 0
    ) -> tuple[tuple[FineTuneRun, ...], int]:
        """A page of runs, newest first, and the total number of runs."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_PAGE:
            raise MemoryValidationError(f"limit must be an integer between 1 and {_MAX_PAGE}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise MemoryValidationError("offset must be a non-negative integer")
        runs = await asyncio.to_thread(self._store.list)
        return tuple(runs[offset : offset + limit]), len(runs)

    async def list_checkpoints(self) -> tuple[CheckpointRecord, ...]:
        """Every checkpoint of the registry, newest first (the active one marked)."""
        return tuple(await asyncio.to_thread(list_checkpoints, self._registry))

    async def get_active_embedder(self) -> ActiveEmbedderSnapshot:
        """Which embedder the registry serves now (the base model until a deploy)."""
        active = await asyncio.to_thread(read_active, self._registry)
        base = self._config.base_model or "minilm"
        spec = f"finetuned:{self._registry}"
        if not active:
            return ActiveEmbedderSnapshot(
                spec=base,
                model_id=None,
                checkpoint_id=None,
                base_model=base,
                deployed_at=None,
                registry=str(self._registry),
            )
        checkpoint_id = active.get("checkpoint_id")
        model_id = None
        if checkpoint_id:
            records = {c.checkpoint_id: c for c in await self.list_checkpoints()}
            record = records.get(str(checkpoint_id))
            model_id = record.model_id if record else None
        return ActiveEmbedderSnapshot(
            spec=spec,
            model_id=model_id,
            checkpoint_id=checkpoint_id,
            base_model=active.get("base_model"),
            deployed_at=active.get("deployed_at"),
            registry=str(self._registry),
        )

    # -- destructive ------------------------------------------------------------------------------

    async def cancel(
        self, *, actor: str, confirm: bool = False, reason: str | None = None
    ) -> str | None:
        """Cancel the active run (this manager's, else one running in another process).

        Returns the cancelled run id, or None when no run was active. The run stops at its next
        batch boundary and keeps its finished stages for :meth:`resume`.
        """
        why = _check_guardrail(actor, confirm, reason, "cancel")
        target = self._active_run
        if target is None:
            runs = await asyncio.to_thread(self._store.list)
            target = next((r.run_id for r in runs if r.status is RunStatus.RUNNING), None)
        if target is None:
            return None
        self._store.request_cancel(target)
        self._audit("cancel", actor, why, target)
        return target

    async def rollback_checkpoint(
        self, checkpoint_id: str, *, actor: str, confirm: bool = False, reason: str | None = None
    ) -> CheckpointRecord:
        """Make ``checkpoint_id`` (or ``"base"``: the base model) the active embedder again.

        Raises:
            MemoryValidationError: the guardrail triple is incomplete.
            MemoryNotFoundError: no such checkpoint in the registry.
        """
        why = _check_guardrail(actor, confirm, reason, "rollback_checkpoint")
        if not isinstance(checkpoint_id, str) or not checkpoint_id.strip():
            raise MemoryValidationError("checkpoint_id must be a non-blank string")
        checkpoint_id = checkpoint_id.strip()
        active = await asyncio.to_thread(read_active, self._registry) or {}
        base_model = str(active.get("base_model") or self._config.base_model or "minilm")
        record: CheckpointRecord
        if checkpoint_id == BASE_CHECKPOINT:
            from memvault.embeddings import create_embedder

            record = CheckpointRecord(
                checkpoint_id=BASE_CHECKPOINT,
                kind="base",
                model_id=create_embedder(base_model).model_id,
                base_model=base_model,
                created_at="",
                active=True,
            )
            target: str | None = None
        else:
            records = {c.checkpoint_id: c for c in await self.list_checkpoints()}
            found = records.get(checkpoint_id)
            if found is None or "/" in checkpoint_id or checkpoint_id.startswith("."):
                raise MemoryNotFoundError(
                    f"no checkpoint {checkpoint_id!r} in {checkpoints_dir(self._registry)}"
                )
            record = found.model_copy(update={"active": True})
            base_model = found.base_model
            target = checkpoint_id
        try:
            await asyncio.to_thread(
                activate,
                self._registry,
                target,
                base_model=base_model,
                actor=actor.strip(),
                reason=why,
                operation="rollback",
            )
        except OSError as exc:
            logger.error(
                "memory.fine_tune.checkpoint_rollback_failed target=%s error=%s",
                checkpoint_id,
                exc,
                extra={
                    "event": "memory.fine_tune.checkpoint_rollback_failed",
                    "target_id": checkpoint_id,
                },
            )
            raise MemoryConflictError(f"rollback to {checkpoint_id} failed: {exc}") from exc
        self._log_admin("rollback", actor, why, checkpoint_id)
        return record

    def _audit(self, operation: str, actor: str, reason: str, target: str) -> None:
        append_audit(
            self._registry,
            {"operation": operation, "actor": actor.strip(), "reason": reason, "target_id": target},
        )
        self._log_admin(operation, actor, reason, target)

    @staticmethod
    def _log_admin(operation: str, actor: str, reason: str, target: str) -> None:
        logger.info(
            "memory.fine_tune.admin_op_executed operation=%s actor=%s target_id=%s reason=%s",
            operation,
            actor,
            target,
            reason,
            extra={
                "event": "memory.fine_tune.admin_op_executed",
                "operation": operation,
                "actor": actor,
                "target_id": target,
                "reason": reason,
            },
        )

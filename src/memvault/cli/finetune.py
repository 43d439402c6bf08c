"""``memvault finetune``: fine-tune the embedder on your documents, deploy, roll back.

Every command works on one checkpoint registry: ``--registry``, else
``$MEMVAULT_FINETUNE_REGISTRY``, else ``memory.fine_tune.checkpoint_path`` of the
configuration. ``start`` and ``resume`` run the pipeline in the foreground with a progress bar
on stderr (when it is a terminal) and print each stage's time and the before/after metrics;
``cancel`` stops a run started elsewhere (another terminal, the server) at its next batch.
``cancel`` and ``rollback`` are destructive: they need ``--reason`` and ``--yes``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from memvault.cli._common import JsonOption, emit_json, local_user, out, progress_bar, state
from memvault.errors import MemoryConfigError
from memvault.finetune.config import (
    EmbeddingFineTuneConfig,
    FineTunePlan,
    FineTuneRun,
    PreflightResult,
    Stage,
)
from memvault.finetune.manager import FineTuneManager

__all__ = ["finetune_app", "register"]

REGISTRY_ENV = "MEMVAULT_FINETUNE_REGISTRY"

finetune_app = typer.Typer(
    name="finetune",
    help="Fine-tune the embedder on your documents (generate, mine, train, evaluate, deploy).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

RegistryOption = typer.Option(
    "--registry",
    envvar=REGISTRY_ENV,
    help="Checkpoint registry directory (default: memory.fine_tune.checkpoint_path).",
)
ReasonOption = typer.Option("--reason", help="Why (recorded in the registry's audit log).")
YesOption = typer.Option("--yes", "-y", help="Confirm this destructive operation.")


def _config() -> EmbeddingFineTuneConfig:
    from memvault.config import load_config

    section = getattr(load_config(state.config, url=state.db), "fine_tune", None)
    return section if isinstance(section, EmbeddingFineTuneConfig) else EmbeddingFineTuneConfig()


def _manager(
    registry: str | None,
    *,
    runner: str | None = None,
    llm_url: str | None = None,
    llm_model: str = "gpt-4o-mini",
    progress: Callable[[str, Stage, int, int], None] | None = None,
) -> FineTuneManager:
    config = _config()
    if registry is None and config.checkpoint_path is None:
        raise MemoryConfigError(
            f"no checkpoint registry: pass --registry DIR, set ${REGISTRY_ENV}, or set "
            "memory.fine_tune.checkpoint_path"
        )
    llm = None
    if llm_url:
        from memvault.llm import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(llm_url, llm_model)
    return FineTuneManager(
        config, registry=registry, llm=llm, runner=runner, progress=progress, actor=local_user()
    )


@contextmanager
def _progress_bar() -> Iterator[Callable[[str, Stage, int, int], None]]:
    # One bar per stage of the run (the run id is not shown: there is one run per command).
    with progress_bar() as bar:
        yield lambda _run_id, stage, done, total: bar(stage.value, done, total)


def _render_run(run: FineTuneRun) -> str:
    lines = [f"run {run.run_id}: {run.status.value}" + (f" ({run.error})" if run.error else "")]
    for record in run.stages:
        secs = "" if record.seconds is None else f"{record.seconds:8.2f}s"
        lines.append(f"  {record.stage.value:<9} {record.status.value:<10} {secs}")
    if run.checkpoint_id:
        lines.append(f"checkpoint: {run.checkpoint_id} (trainer {run.trainer})")
    m = run.metrics
    if m is not None:
        lines.append(f"held-out: {m.queries} queries over {m.passages} passages")
        lines.append(
            f"  base        NDCG@10 {m.base_ndcg_at_10:.4f}  Recall@10 {m.base_recall_at_10:.4f}"
        )
        lines.append(
            f"  fine-tuned  NDCG@10 {m.checkpoint_ndcg_at_10:.4f}  "
            f"Recall@10 {m.checkpoint_recall_at_10:.4f}"
        )
    deploy = run.stage(Stage.DEPLOY).summary
    if deploy.get("message"):
        lines.append(str(deploy["message"]))
    elif deploy.get("reason"):
        lines.append(f"not deployed: {deploy['reason']}")
    return "\n".join(lines)


def _emit_run(run: FineTuneRun, as_json: bool) -> None:
    if as_json:
        emit_json(run.model_dump(mode="json"))
    else:
        out.print(_render_run(run), markup=False)


def _plan(options: dict[str, Any]) -> FineTunePlan:
    fields = {k: v for k, v in options.items() if v is not None}
    return FineTunePlan(**fields)


def _plan_or_error(options: dict[str, Any]) -> FineTunePlan:
    from pydantic import ValidationError

    from memvault.errors import MemoryValidationError

    try:
        return _plan(options)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "plan"
        raise MemoryValidationError(f"invalid plan: {where}: {first['msg']}") from None


def _render_preflight(result: PreflightResult) -> str:
    lines = [f"preflight: {'ok' if result.ok else 'FAILED'} (trainer {result.trainer})"]
    lines += [f"  {'ok ' if c.ok else 'ERR'} {c.name}: {c.detail}" for c in result.checks]
    return "\n".join(lines)


# Options shared by start and preflight: the plan.
SourceDirOpt = Annotated[
    str | None, typer.Option("--source-dir", help="Documents to fine-tune on (.md .txt .rst).")
]
PairsOpt = Annotated[
    str | None,
    typer.Option("--pairs-file", help='JSON lines {"query": ..., "passage": ...}: skips the LLM.'),
]
BaseOpt = Annotated[str | None, typer.Option("--base-model", help="Base embedder spec.")]
TrainerOpt = Annotated[
    str | None, typer.Option("--trainer", help="auto (default), adapter or biencoder.")
]
EpochsOpt = Annotated[int | None, typer.Option("--epochs", help="Training epochs (3).")]
LrOpt = Annotated[
    float | None, typer.Option("--learning-rate", help="Bi-encoder learning rate (1e-5).")
]
TauOpt = Annotated[float | None, typer.Option("--temperature", help="InfoNCE tau (0.02).")]
BatchOpt = Annotated[int | None, typer.Option("--batch-size", help="Training batch (32).")]
DeployOpt = Annotated[
    bool, typer.Option("--deploy/--no-deploy", help="Make the checkpoint active if it wins.")
]
LlmUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--llm-url", envvar="MEMVAULT_LLM_BASE_URL", help="OpenAI-compatible LLM for queries."
    ),
]
LlmModelOpt = Annotated[
    str, typer.Option("--llm-model", envvar="MEMVAULT_LLM_MODEL", help="LLM model name.")
]


@finetune_app.command("start")
def start_cmd(
    registry: Annotated[str | None, RegistryOption] = None,
    source_dir: SourceDirOpt = None,
    pairs_file: PairsOpt = None,
    base_model: BaseOpt = None,
    trainer: TrainerOpt = None,
    epochs: EpochsOpt = None,
    learning_rate: LrOpt = None,
    temperature: TauOpt = None,
    batch_size: BatchOpt = None,
    deploy: DeployOpt = True,
    runner: Annotated[
        str | None, typer.Option("--runner", help="in-process (default) or subprocess.")
    ] = None,
    llm_url: LlmUrlOpt = None,
    llm_model: LlmModelOpt = "gpt-4o-mini",
    as_json: bool = JsonOption,
) -> None:
    """Run the whole pipeline now; prints stage times and base vs fine-tuned metrics."""
    plan = _plan_or_error(
        {
            "source_dir": source_dir,
            "pairs_file": pairs_file,
            "base_model": base_model,
            "trainer": trainer,
            "epochs": epochs,
            "learning_rate": learning_rate,
            "temperature": temperature,
            "batch_size": batch_size,
            "deploy": deploy,
        }
    )
    with _progress_bar() as update:
        manager = _manager(
            registry, runner=runner, llm_url=llm_url, llm_model=llm_model, progress=update
        )
        run = asyncio.run(manager.start(plan, wait=True))
    _emit_run(run, as_json)


@finetune_app.command("preflight")
def preflight_cmd(
    registry: Annotated[str | None, RegistryOption] = None,
    source_dir: SourceDirOpt = None,
    pairs_file: PairsOpt = None,
    base_model: BaseOpt = None,
    trainer: TrainerOpt = None,
    llm_url: LlmUrlOpt = None,
    llm_model: LlmModelOpt = "gpt-4o-mini",
    as_json: bool = JsonOption,
) -> None:
    """Check that a plan can run here (exit code 1 when it cannot)."""
    plan = _plan_or_error(
        {
            "source_dir": source_dir,
            "pairs_file": pairs_file,
            "base_model": base_model,
            "trainer": trainer,
        }
    )
    manager = _manager(registry, llm_url=llm_url, llm_model=llm_model)
    result = asyncio.run(manager.preflight(plan))
    if as_json:
        emit_json(result.model_dump(mode="json"))
    else:
        out.print(_render_preflight(result), markup=False)
    if not result.ok:
        raise typer.Exit(1)


@finetune_app.command("resume")
def resume_cmd(
    run_id: Annotated[str, typer.Argument(help="The run to resume.")],
    registry: Annotated[str | None, RegistryOption] = None,
    runner: Annotated[
        str | None, typer.Option("--runner", help="in-process or subprocess.")
    ] = None,
    llm_url: LlmUrlOpt = None,
    llm_model: LlmModelOpt = "gpt-4o-mini",
    as_json: bool = JsonOption,
) -> None:
    """Resume a failed or cancelled run from its first unfinished stage."""
    with _progress_bar() as update:
        manager = _manager(
            registry, runner=runner, llm_url=llm_url, llm_model=llm_model, progress=update
        )
        run = asyncio.run(manager.resume(run_id, wait=True))
    _emit_run(run, as_json)


@finetune_app.command("status")
def status_cmd(
    run_id: Annotated[str | None, typer.Argument(help="A run (default: the latest).")] = None,
    registry: Annotated[str | None, RegistryOption] = None,
    as_json: bool = JsonOption,
) -> None:
    """Show a run's stages, times and metrics (the latest run by default)."""
    status = asyncio.run(_manager(registry).status(run_id))
    if as_json:
        emit_json(status.model_dump(mode="json"))
    elif status.run is None:
        out.print("no fine-tune runs yet", markup=False)
    else:
        _emit_run(status.run, False)


@finetune_app.command("list")
def list_cmd(
    registry: Annotated[str | None, RegistryOption] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 20,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    as_json: bool = JsonOption,
) -> None:
    """List runs, newest first."""
    runs, total = asyncio.run(_manager(registry).list_runs(limit=limit, offset=offset))
    if as_json:
        emit_json({"total": total, "runs": [r.model_dump(mode="json") for r in runs]})
        return
    for run in runs:
        m = run.metrics
        score = (
            ""
            if m is None
            else f" ndcg@10 {m.base_ndcg_at_10:.3f} -> {m.checkpoint_ndcg_at_10:.3f}"
        )
        deployed = " deployed" if run.deployed else ""
        out.print(f"{run.run_id}  {run.status.value}{score}{deployed}", markup=False)
    out.print(f"{len(runs)} of {total} run(s)", markup=False)


@finetune_app.command("checkpoints")
def checkpoints_cmd(
    registry: Annotated[str | None, RegistryOption] = None,
    as_json: bool = JsonOption,
) -> None:
    """List checkpoints and show which embedder is active."""
    manager = _manager(registry)
    checkpoints = asyncio.run(manager.list_checkpoints())
    active = asyncio.run(manager.get_active_embedder())
    if as_json:
        emit_json(
            {
                "active": active.model_dump(mode="json"),
                "checkpoints": [c.model_dump(mode="json") for c in checkpoints],
            }
        )
        return
    out.print(f"active: {active.checkpoint_id or 'base model ' + str(active.base_model)}")
    for c in checkpoints:
        mark = "*" if c.active else " "
        out.print(f"{mark} {c.checkpoint_id}  {c.kind}  {c.model_id}", markup=False)


@finetune_app.command("cancel")
def cancel_cmd(
    reason: Annotated[str | None, ReasonOption] = None,
    yes: Annotated[bool, YesOption] = False,
    registry: Annotated[str | None, RegistryOption] = None,
) -> None:
    """Cancel the running fine-tune (it stops at its next batch; resume continues it)."""
    cancelled = asyncio.run(
        _manager(registry).cancel(actor=local_user(), confirm=yes, reason=reason)
    )
    out.print(f"cancelled {cancelled}" if cancelled else "no fine-tune run is active")


@finetune_app.command("rollback")
def rollback_cmd(
    checkpoint_id: Annotated[str, typer.Argument(help="A checkpoint id, or 'base'.")],
    reason: Annotated[str | None, ReasonOption] = None,
    yes: Annotated[bool, YesOption] = False,
    registry: Annotated[str | None, RegistryOption] = None,
) -> None:
    """Make an earlier checkpoint (or the base model) the active embedder again."""
    record = asyncio.run(
        _manager(registry).rollback_checkpoint(
            checkpoint_id, actor=local_user(), confirm=yes, reason=reason
        )
    )
    out.print(
        f"active embedder: {record.checkpoint_id} ({record.model_id}); stores embedded with "
        "another model must be re-embedded: run `memvault reindex`",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    """Add the ``finetune`` command group to the ``memvault`` app."""
    app.add_typer(finetune_app, name="finetune")

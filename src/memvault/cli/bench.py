"""``memvault bench``: retrieval benchmarks on a dataset the user downloaded.

A progress bar goes to stderr when it is a terminal; the result table (or ``--json``) goes to
stdout, so ``memvault bench locomo --data x.json --json > result.json`` keeps a clean file. The
global ``--db`` is ignored: every conversation or question gets its own fresh store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memvault.bench import (
    BenchReport,
    render_report,
    run_locomo,
    run_longmemeval,
)
from memvault.cli._common import JsonOption, emit_json, err_console, out

__all__ = ["bench_app", "register"]


class BackendChoice(StrEnum):
    """Names where each benchmark store lives."""

    SQLITE = "sqlite"
    MEMORY = "memory"


bench_app = typer.Typer(
    name="bench",
    help="Run retrieval benchmarks (LoCoMo, LongMemEval) on a downloaded dataset.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

DataOption = typer.Option(
    "--data",
    help="Path of the dataset file (JSON, as published; it is not bundled with memvault).",
    show_default=False,
)
PresetOption = typer.Option("--preset", "-p", help="Retrieval preset: default, bm25, dense, ...")
BackendOption = typer.Option(
    "--backend",
    help="Store of each conversation/question: a temporary SQLite file or in-process memory.",
    case_sensitive=False,
)


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    # The bar starts on the runner's first report, which comes after the data file, preset and
    # options were checked: a bad input fails with its one-line message and no bar around it.
    progress: Progress | None = None
    task: TaskID | None = None

    def update(done: int, total: int) -> None:
        nonlocal progress, task
        if not err_console.is_terminal:
            return  # a bar cannot animate in a log file; it would only leave a blank line
        if progress is None:
            progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=err_console,
                transient=True,
            )
            progress.start()
            task = progress.add_task(label, total=total)
        assert task is not None
        progress.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if progress is not None:
            progress.stop()


def _emit(report: BenchReport, json_out: bool) -> None:
    if json_out:
        emit_json(report.to_json())
    else:
        out.print(render_report(report))


@bench_app.command("locomo")
def locomo(
    data: Annotated[Path, DataOption],
    json_out: bool = JsonOption,
    preset: Annotated[str, PresetOption] = "default",
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="Results retrieved per question.")
    ] = 50,
    backend: Annotated[BackendChoice, BackendOption] = BackendChoice.SQLITE,
    max_conversations: Annotated[
        int | None,
        typer.Option("--max-conversations", min=1, help="Evaluate only the first N conversations."),
    ] = None,
) -> None:
    """Measure evidence recall on LoCoMo (one store per conversation, a memory per turn)."""
    with _progress("conversations") as update:
        report = asyncio.run(
            run_locomo(
                data,
                preset=preset,
                limit=limit,
                backend=backend.value,
                progress=update,
                max_conversations=max_conversations,
            )
        )
    _emit(report, json_out)


@bench_app.command("longmemeval")
def longmemeval(
    data: Annotated[Path, DataOption],
    json_out: bool = JsonOption,
    preset: Annotated[str, PresetOption] = "default",
    backend: Annotated[BackendChoice, BackendOption] = BackendChoice.SQLITE,
    max_questions: Annotated[
        int | None,
        typer.Option("--max-questions", min=1, help="Evaluate only the first N questions."),
    ] = None,
    dedup: Annotated[
        bool,
        typer.Option(
            "--dedup/--no-dedup",
            help="Ingest with write-time dedup (the default, as a user's add_many) or without "
            "(several times faster on long haystacks; rankings barely change).",
        ),
    ] = True,
) -> None:
    """Measure session and turn recall on LongMemEval (one store per question)."""
    with _progress("questions") as update:
        report = asyncio.run(
            run_longmemeval(
                data,
                preset=preset,
                backend=backend.value,
                progress=update,
                max_questions=max_questions,
                dedup=None if dedup else False,
            )
        )
    _emit(report, json_out)


def register(app: typer.Typer) -> None:
    """Attach the ``bench`` command group to ``app``."""
    app.add_typer(bench_app, name="bench")

"""``memvault bench``: retrieval benchmarks on a dataset the user downloaded.

Progress bars go to stderr; the result table (or ``--json``) goes to stdout, so
``memvault bench locomo --data x.json --json > result.json`` keeps a clean file. The global
``--db`` is ignored: every conversation or question gets its own fresh store.
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
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memvault.bench import (
    BenchReport,
    load_locomo,
    load_longmemeval,
    render_report,
    run_locomo,
    run_longmemeval,
)
from memvault.cli._common import JsonOption, emit_json, err_console, out

__all__ = ["bench_app", "register"]


class BackendChoice(StrEnum):
    """Where each benchmark store lives."""

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
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


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
    """Evidence recall on LoCoMo: one store per conversation, one memory per turn."""
    # Loaded before the progress bar starts, so a bad file fails with nothing but its message.
    dataset = load_locomo(data)
    with _progress("conversations") as update:
        report = asyncio.run(
            run_locomo(
                dataset,
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
) -> None:
    """Session and turn recall on LongMemEval: one store per question, one memory per turn."""
    dataset = load_longmemeval(data)
    with _progress("questions") as update:
        report = asyncio.run(
            run_longmemeval(
                dataset,
                preset=preset,
                backend=backend.value,
                progress=update,
                max_questions=max_questions,
            )
        )
    _emit(report, json_out)


def register(app: typer.Typer) -> None:
    """Attach the ``bench`` command group to ``app``."""
    app.add_typer(bench_app, name="bench")

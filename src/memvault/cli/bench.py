"""``memvault bench``: retrieval benchmarks on a dataset the user downloaded.

A progress bar goes to stderr when it is a terminal; the result table (or ``--json``) goes to
stdout, so ``memvault bench locomo --data x.json --json > result.json`` keeps a clean file. The
global ``--db`` is ignored: every conversation or question gets its own fresh store.
"""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from memvault.bench import (
    BenchReport,
    LocomoDataset,
    load_locomo,
    render_report,
    run_locomo,
    run_longmemeval,
)
from memvault.bench.locomo_units import (
    LocomoUnitsReport,
    parse_conversations,
    render_units_report,
    run_locomo_units,
    select_conversations,
)
from memvault.bench.scale import (
    ScaleOptions,
    parse_backend,
    parse_sizes,
    render_scale,
    run_scale,
)
from memvault.cli._common import JsonOption, emit_json, err_console, out, progress_bar

__all__ = ["bench_app", "register"]


class UnitChoice(StrEnum):
    """Names what one LoCoMo memory is."""

    TURNS = "turns"
    FACTS = "facts"
    SUMMARIES = "summaries"


class BackendChoice(StrEnum):
    """Names where each benchmark store lives."""

    SQLITE = "sqlite"
    MEMORY = "memory"


bench_app = typer.Typer(
    name="bench",
    help="Run retrieval benchmarks (LoCoMo, LongMemEval) on a downloaded dataset, or speed at "
    "scale (scale).",
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


def _emit(report: BenchReport, json_out: bool) -> None:
    if json_out:
        emit_json(report.to_json())
    elif isinstance(report, LocomoUnitsReport):
        out.print(render_units_report(report))
    else:
        out.print(render_report(report))


@bench_app.command("locomo")
def locomo(
    data: Annotated[Path, DataOption],
    json_out: bool = JsonOption,
    preset: Annotated[str, PresetOption] = "default",
    unit: Annotated[
        UnitChoice,
        typer.Option(
            "--unit",
            help="What one memory is: a dialogue turn (recall of evidence turns), an "
            "observation fact or a session summary (recall of gold facts/summaries, default "
            "context() hit and precision, relevance AUC, off-topic empty contexts).",
            case_sensitive=False,
        ),
    ] = UnitChoice.TURNS,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            "-n",
            min=1,
            help="Results retrieved per question (turns; facts and summaries take the top 20).",
        ),
    ] = 50,
    backend: Annotated[BackendChoice, BackendOption] = BackendChoice.SQLITE,
    conversations: Annotated[
        str | None,
        typer.Option(
            "--conversations",
            help="Evaluate only these conversations, by 0-based index: 0-4, 5-9, 0,2,7.",
            show_default=False,
        ),
    ] = None,
    max_conversations: Annotated[
        int | None,
        typer.Option("--max-conversations", min=1, help="Evaluate only the first N conversations."),
    ] = None,
) -> None:
    """Measure retrieval on LoCoMo: one store per conversation, a memory per turn/fact/summary."""
    report: BenchReport
    if unit is UnitChoice.TURNS:
        dataset = load_locomo(data)
        picked = select_conversations(conversations, len(dataset.conversations))
        chosen = LocomoDataset(
            path=dataset.path, conversations=tuple(dataset.conversations[i] for i in picked)
        )
        with progress_bar(console=err_console) as bar:
            report = asyncio.run(
                run_locomo(
                    chosen,
                    preset=preset,
                    limit=limit,
                    backend=backend.value,
                    progress=partial(bar, "conversations"),
                    max_conversations=max_conversations,
                )
            )
    else:
        with progress_bar(console=err_console) as bar:
            report = asyncio.run(
                run_locomo_units(
                    data,
                    unit="facts" if unit is UnitChoice.FACTS else "summaries",
                    preset=preset,
                    backend=backend.value,
                    progress=partial(bar, "conversations"),
                    conversations=_first(conversations, max_conversations),
                )
            )
    _emit(report, json_out)


def _first(selection: str | None, first: int | None) -> str | None:
    # --max-conversations N with --unit facts/summaries: the first N of the selection.
    if first is None:
        return selection
    if selection is None:
        return f"0-{first - 1}"
    return ",".join(str(i) for i in parse_conversations(selection)[:first])


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
    with progress_bar(console=err_console) as bar:
        report = asyncio.run(
            run_longmemeval(
                data,
                preset=preset,
                backend=backend.value,
                progress=partial(bar, "questions"),
                max_questions=max_questions,
                dedup=None if dedup else False,
            )
        )
    _emit(report, json_out)


@bench_app.command("scale")
def scale(
    sizes: Annotated[
        str,
        typer.Option(
            "--sizes",
            help="Store sizes to measure, comma-separated (10k and 1m accepted); each gets a "
            "fresh store.",
        ),
    ] = "1000,10000",
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="sqlite (a temporary file per size), memory, or a postgresql:// URL (a fresh "
            "schema per size, dropped after).",
        ),
    ] = "sqlite",
    queries: Annotated[
        int,
        typer.Option(
            "--queries",
            "-q",
            min=1,
            help="Searches timed per size (unique queries, default preset, embedding included).",
        ),
    ] = 200,
    adds: Annotated[
        int,
        typer.Option("--adds", min=0, help="Single add() calls with dedup on, timed per size."),
    ] = 200,
    corpus: Annotated[
        str,
        typer.Option(
            "--corpus",
            help="synthetic, or the path of a LoCoMo/LongMemEval file whose turns and questions "
            "are the memories and queries (topped up with synthetic ones when short).",
        ),
    ] = "synthetic",
    ingest_dedup: Annotated[
        bool,
        typer.Option(
            "--ingest-dedup/--no-ingest-dedup",
            help="Fill each store with write-time dedup on (a user's add_many default; several "
            "times slower on big stores) or off (the default: a bulk load).",
        ),
    ] = False,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            help="Also write the report as JSON to this file ('-': print JSON instead of the "
            "table).",
            show_default=False,
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare",
            help="A git ref (HEAD~1, main, a tag) whose build runs beside this one from a "
            "temporary worktree, the two taking turns chunk by chunk; the table adds this/ref "
            "ratios.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Measure add_many rate, search p50/p95/p99, single-add rate, peak RSS and store size."""
    options = ScaleOptions(
        sizes=parse_sizes(sizes),
        backend=parse_backend(backend),
        queries=queries,
        adds=adds,
        corpus=corpus,
        compare=compare,
        ingest_dedup=ingest_dedup,
    )
    # One bar per step (size, phase, build); a finished step's bar is replaced by the next one.
    with progress_bar(console=err_console, replace=True) as bar:
        report = run_scale(options, bar)
    if json_path is not None and str(json_path) == "-":
        emit_json(report)
        return
    out.print(render_scale(report))
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        err_console.print(f"wrote {json_path}")


def register(app: typer.Typer) -> None:
    """Attach the ``bench`` command group to ``app``."""
    app.add_typer(bench_app, name="bench")

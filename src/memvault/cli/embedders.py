"""``memvault embedders``: measure which embedder retrieves each memory category best.

``eval`` builds per-category retrieval tasks (episodic, procedural, semantic, social) from a
dataset file (LoCoMo or LongMemEval) or from the ``--db`` store, runs every available embedder
(or those named with ``--embedder``) and prints NDCG@10 / Recall@10 per category plus speed and
memory. ``select`` shows what ``embedder: auto`` resolves to here, and why.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from memvault.bench.embedders import (
    DEFAULT_MAX_PASSAGES,
    DEFAULT_MAX_QUERIES,
    EvalSuite,
    available_embedder_specs,
    evaluate_embedders,
    render_reports,
    suite_from_entries,
    suite_from_locomo,
    suite_from_longmemeval,
)
from memvault.cli._common import JsonOption, emit_json, open_memory, out, progress_bar
from memvault.errors import MemoryValidationError

__all__ = ["embedders_app", "register"]

embedders_app = typer.Typer(
    name="embedders",
    help="Evaluate embedders per memory category, and show what 'embedder: auto' picks.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class Source(StrEnum):
    """Where the evaluation pairs come from."""

    STORE = "store"
    LOCOMO = "locomo"
    LONGMEMEVAL = "longmemeval"


def build_suite(
    source: Source, data: Path | None, *, max_queries: int, max_passages: int, seed: int
) -> EvalSuite:
    """The evaluation suite of ``source`` (``data`` is the dataset file, not used for a store).

    Raises:
        MemoryValidationError: a dataset source without ``--data``, or nothing usable in it.
    """
    if source is Source.STORE:
        if data is not None:
            raise MemoryValidationError("--data is only for --source locomo or longmemeval")
        entries = open_memory().export()
        return suite_from_entries(
            entries, max_queries=max_queries, max_passages=max_passages, seed=seed
        )
    if data is None:
        raise MemoryValidationError(f"--source {source.value} needs --data PATH (the dataset file)")
    build = suite_from_locomo if source is Source.LOCOMO else suite_from_longmemeval
    return build(data, max_queries=max_queries, max_passages=max_passages, seed=seed)


@embedders_app.command("eval")
def eval_cmd(
    source: Annotated[
        Source,
        typer.Option("--source", "-s", case_sensitive=False, help="Where the pairs come from."),
    ] = Source.STORE,
    data: Annotated[
        Path | None, typer.Option("--data", help="Dataset file for locomo / longmemeval.")
    ] = None,
    embedder: Annotated[
        list[str] | None,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec to evaluate (repeatable; default: every available one).",
        ),
    ] = None,
    max_queries: Annotated[
        int, typer.Option("--max-queries", min=1, help="Queries per category (sampled).")
    ] = DEFAULT_MAX_QUERIES,
    max_passages: Annotated[
        int, typer.Option("--max-passages", min=1, help="Pool size per category.")
    ] = DEFAULT_MAX_PASSAGES,
    seed: Annotated[int, typer.Option("--seed", help="Sampling seed.")] = 0,
    json_out: bool = JsonOption,
) -> None:
    """NDCG@10 and Recall@10 per memory category for each embedder, plus speed and memory."""
    suite = build_suite(source, data, max_queries=max_queries, max_passages=max_passages, seed=seed)
    specs = list(embedder or available_embedder_specs())
    with progress_bar() as bar:  # one bar per embedder
        reports = evaluate_embedders(specs, suite, progress=bar)
    if json_out:
        emit_json({"source": suite.source, "embedders": [r.to_json() for r in reports]})
    else:
        out.print(render_reports(reports, suite), markup=False)


@embedders_app.command("select")
def select_cmd(json_out: bool = JsonOption) -> None:
    """Show the tier and embedder 'embedder: auto' picks from the environment, and why."""
    from memvault.embeddings.selection import auto_select_from_env

    selection = auto_select_from_env()
    if json_out:
        emit_json(
            {"tier": selection.tier.value, "spec": selection.spec, "reason": selection.reason}
        )
    else:
        out.print(
            f"tier: {selection.tier.value}\nembedder: {selection.spec}\nreason: {selection.reason}",
            markup=False,
        )


def register(app: typer.Typer) -> None:
    """Add the ``embedders`` command group to the ``memvault`` app."""
    app.add_typer(embedders_app, name="embedders")

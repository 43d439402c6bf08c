"""``memvault maintain``: run the maintenance jobs that are due (consolidation, sweeps, evolver).

One pass by default; ``--daemon`` repeats it every ``maintenance.poll_seconds`` until
interrupted. Last-run times and the one-runner lease live in the store, so this command, a
cron job running it and a ``memvault serve`` on the same store never both run a pass, and no
job runs before it is due (``--force`` runs every job now). ``--dry-run`` lists every memory the
due consolidations would merge, group by group, and changes nothing.
"""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from memvault.cli._common import JsonOption, close_memory, load_cli_config, open_memory, out, state
from memvault.errors import MemoryValidationError

__all__ = ["maintain", "register"]


def maintain(
    daemon: Annotated[
        bool,
        typer.Option("--daemon", help="Keep running: a pass every maintenance.poll_seconds."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Run every job now, whether it is due or not.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help=(
                "List every memory the due consolidations would merge, group by group; change "
                "nothing (no sweep, no recorded run)."
            ),
        ),
    ] = False,
    as_json: bool = JsonOption,
    passes: Annotated[
        int | None,
        typer.Option("--passes", min=1, hidden=True, help="With --daemon: stop after N passes."),
    ] = None,
) -> None:
    """Run the maintenance jobs that are due: consolidation, retention sweeps, skill evolver.

    Consolidation merges only memories older than ``memory.consolidation.min_age_days`` (30
    days unless configured). Exits 0 when the pass ran cleanly, 1 when another runner held the
    store's lease or a job failed (the line says which).
    """
    if daemon and dry_run:
        msg = "--dry-run plans one pass; it cannot be combined with --daemon"
        raise MemoryValidationError(msg)
    from memvault.maintenance import MaintenanceScheduler

    config = load_cli_config()
    url = state.db or config.resolved_url()
    if url.startswith(("http://", "https://")):
        msg = "maintain needs a local store (a path or postgresql:// URL), not a server"
        raise MemoryValidationError(msg)
    memory = open_memory()
    scheduler = MaintenanceScheduler(memory.aio)
    clean = True
    done = 0
    try:
        while True:
            report = memory._run(scheduler.run_pass(force=force, dry_run=dry_run))
            clean = report.ran and not report.errors
            if as_json:
                out.print(json.dumps(report.model_dump(mode="json")), markup=False)
            else:
                out.print(report.summary(), markup=False)
                for line in report.plan_lines():
                    out.print(line, markup=False)
            done += 1
            if not daemon or (passes is not None and done >= passes):
                break
            time.sleep(scheduler.config.poll_seconds)
    except KeyboardInterrupt:
        # --daemon runs until interrupted: that is its normal end.
        clean = True
    finally:
        memory._run(scheduler.close())
        close_memory()
    if not clean:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``maintain`` to the CLI."""
    app.command("maintain")(maintain)

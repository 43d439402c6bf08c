"""Where the heavy stages (mine, train, evaluate, deploy) run: this process or a child process.

:class:`InProcessRunner` runs them in a worker thread. :class:`SubprocessRunner` runs them in a
fresh ``python -m memvault.finetune.runner <config.json>`` process, the design's stage-config
contract: the child reads ``config.json`` from the run directory (the registry, the run id, the
stages to run), executes them, and prints structured markers on stdout, which the parent parses
for progress::

    STAGE_START:<stage>
    PROGRESS:<stage>:<done>:<total>
    STAGE_COMPLETE:<stage>
    RUN_CANCELLED:<stage>        (exit code 3)
    RUN_FAILED:<message>         (exit code 1)

A child keeps the training process's memory (torch, a few GB at peak) out of a long-running
server, and a crash there cannot take the server down. When the child cannot be started at all
(no interpreter at ``sys.executable``, a sandbox that forbids spawning), the runner logs
``memory.fine_tune.runner_fallback`` and runs the stages in process instead.

The same module is what a container image runs: mount the registry, write ``config.json``, run
``python -m memvault.finetune.runner /path/config.json``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from memvault.errors import FineTuneCancelledError, MemoryError, MemoryStoreError
from memvault.finetune.config import Stage
from memvault.finetune.pipeline import RunContext, run_sync_stages
from memvault.finetune.state import RunStore, write_json

__all__ = ["CONFIG_FILE", "InProcessRunner", "StageRunner", "SubprocessRunner", "main"]

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
EXIT_CANCELLED = 3


class StageRunner(Protocol):
    """Runs the synchronous stages of a run."""

    name: str

    async def run(self, ctx: RunContext, stages: Sequence[Stage]) -> None:
        """Run ``stages`` in order; raises what a stage raised (cancel included)."""
        ...


class InProcessRunner:
    """Runs the stages in a worker thread of this process."""

    name = "in-process"

    async def run(self, ctx: RunContext, stages: Sequence[Stage]) -> None:
        """Run ``stages`` in order in a worker thread."""
        await asyncio.to_thread(run_sync_stages, ctx, stages)


class SubprocessRunner:
    """Runs the stages in a child Python process (see the module docstring)."""

    name = "subprocess"

    def __init__(self, python: str | None = None, *, fallback: bool = True) -> None:
        """``python`` is the interpreter to start (default: this one)."""
        self._python = python or sys.executable
        self._fallback = fallback

    async def run(self, ctx: RunContext, stages: Sequence[Stage]) -> None:
        """Start the child, relay its progress, and raise what its exit status says."""
        config = ctx.run_dir / CONFIG_FILE
        write_json(
            config,
            {
                "registry": str(ctx.registry),
                "run_id": ctx.run_id,
                "stages": [s.value for s in stages],
                "actor": ctx.actor,
            },
        )
        try:
            proc = await asyncio.create_subprocess_exec(
                self._python,
                "-m",
                "memvault.finetune.runner",
                str(config),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            if not self._fallback:
                raise MemoryStoreError(f"cannot start the fine-tune runner process: {exc}") from exc
            logger.warning(
                "memory.fine_tune.runner_fallback run_id=%s error=%s",
                ctx.run_id,
                exc,
                extra={"event": "memory.fine_tune.runner_fallback", "run_id": ctx.run_id},
            )
            await InProcessRunner().run(ctx, stages)
            return
        assert proc.stdout is not None and proc.stderr is not None
        stderr_task = asyncio.create_task(proc.stderr.read())
        failure: str | None = None
        cancelled_stage: str | None = None
        while True:
            line = await proc.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace").strip()
            kind, _, rest = text.partition(":")
            if kind == "PROGRESS" and ctx.progress is not None:
                stage, done, total = rest.split(":")
                ctx.progress(Stage(stage), int(done), int(total))
            elif kind == "RUN_FAILED":
                failure = rest
            elif kind == "RUN_CANCELLED":
                cancelled_stage = rest or None
        code = await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace").strip()
        if code == EXIT_CANCELLED:
            raise FineTuneCancelledError(
                f"fine-tune run {ctx.run_id} was cancelled"
                + (f" during stage {cancelled_stage}" if cancelled_stage else ""),
                run_id=ctx.run_id,
                stage=cancelled_stage,
            )
        if code != 0:
            detail = failure or (stderr.splitlines()[-1] if stderr else f"exit code {code}")
            raise MemoryStoreError(f"the fine-tune runner process failed: {detail}")


def _emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the child process: run the stages named in ``config.json``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m memvault.finetune.runner CONFIG_JSON\n")
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    try:
        config = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        store = RunStore(Path(config["registry"]))
        progress: Callable[[Stage, int, int], None] = lambda stage, done, total: _emit(  # noqa: E731
            f"PROGRESS:{stage.value}:{done}:{total}"
        )
        ctx = RunContext(
            store=store,
            run_id=str(config["run_id"]),
            registry=Path(config["registry"]),
            progress=progress,
            actor=str(config.get("actor") or "fine-tune"),
        )
        run_sync_stages(ctx, [Stage(s) for s in config["stages"]], marker=_emit)
    except FineTuneCancelledError as exc:
        _emit(f"RUN_CANCELLED:{exc.stage or ''}")
        return EXIT_CANCELLED
    except (MemoryError, OSError, ValueError, KeyError) as exc:
        _emit("RUN_FAILED:" + " ".join(f"{type(exc).__name__}: {exc}".split()))
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through SubprocessRunner
    sys.exit(main())

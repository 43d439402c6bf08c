"""On-disk state of fine-tune runs and of the checkpoint registry.

A registry directory looks like this::

    <registry>/
      active.json                 the deployed checkpoint (see memvault.embeddings.adapter)
      audit.jsonl                 deploys, rollbacks and cancels: who, why, when
      checkpoints/<checkpoint id>/ meta.json + adapter.npz or model/
      runs/<run id>/
        state.json                the FineTuneRun (status and every stage's record)
        config.json               the stage-config contract of the subprocess runner
        CANCEL                    present once a cancel was requested
        generate/ mine/ train/ evaluate/   each stage's outputs

Every JSON file is written to a temporary name and moved into place, so a reader in another
process (the manager watching a subprocess runner) never sees half a file.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault.embeddings.adapter import ACTIVE_FILE, META_FILE, read_active, read_meta
from memvault.errors import EmbedderUnavailableError, MemoryNotFoundError, MemoryValidationError
from memvault.finetune.config import (
    STAGES,
    CheckpointRecord,
    FineTunePlan,
    FineTuneRun,
    RunStatus,
    StageRecord,
)

__all__ = [
    "AUDIT_FILE",
    "CANCEL_FILE",
    "STATE_FILE",
    "RunStore",
    "activate",
    "append_audit",
    "list_checkpoints",
    "new_id",
    "now",
    "write_json",
]

STATE_FILE = "state.json"
CANCEL_FILE = "CANCEL"
AUDIT_FILE = "audit.jsonl"
RUNS_DIR = "runs"
CHECKPOINTS_DIR = "checkpoints"
BASE_CHECKPOINT = "base"
"""The pseudo checkpoint id that stands for the base model (rollback target)."""


def now() -> str:
    """The current UTC time in ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_id(prefix: str) -> str:
    """A sortable, unique id: ``<prefix>-<UTC timestamp>-<random>``."""
    return f"{prefix}-{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temporary file, then :func:`os.replace`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    os.replace(tmp, path)


def append_audit(registry: Path, record: dict[str, Any]) -> None:
    """Append one audit record (a JSON line) to the registry's ``audit.jsonl``."""
    registry.mkdir(parents=True, exist_ok=True)
    with (registry / AUDIT_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"at": now(), **record}, default=str) + "\n")


class RunStore:
    """The runs of one registry: create, load, save and list ``state.json`` files."""

    def __init__(self, registry: Path) -> None:
        self.registry = registry

    def run_dir(self, run_id: str) -> Path:
        """The directory of ``run_id`` (validated: ids never contain path separators)."""
        if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
            raise MemoryValidationError(f"invalid run id {run_id!r}")
        return self.registry / RUNS_DIR / run_id

    def create(self, plan: FineTunePlan) -> FineTuneRun:
        """A new pending run of ``plan``, saved."""
        stamp = now()
        run = FineTuneRun(
            run_id=new_id("ft"),
            plan=plan,
            status=RunStatus.PENDING,
            created_at=stamp,
            updated_at=stamp,
            stages=tuple(StageRecord(stage=s) for s in STAGES),
        )
        self.save(run)
        return run

    def save(self, run: FineTuneRun) -> FineTuneRun:
        """Persist ``run`` (with a fresh ``updated_at``) and return what was written."""
        run = run.model_copy(update={"updated_at": now()})
        write_json(self.run_dir(run.run_id) / STATE_FILE, run.model_dump(mode="json"))
        return run

    def load(self, run_id: str) -> FineTuneRun:
        """The saved state of ``run_id``.

        Raises:
            MemoryNotFoundError: no such run in this registry.
        """
        path = self.run_dir(run_id) / STATE_FILE
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise MemoryNotFoundError(f"no fine-tune run {run_id!r} in {self.registry}") from None
        return FineTuneRun.model_validate_json(raw)

    def list(self) -> list[FineTuneRun]:
        """Every run, newest first."""
        root = self.registry / RUNS_DIR
        if not root.is_dir():
            return []
        runs = []
        for entry in root.iterdir():
            if (entry / STATE_FILE).is_file():
                runs.append(self.load(entry.name))
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    def request_cancel(self, run_id: str) -> None:
        """Leave the cancel marker a running stage (in any process) polls."""
        marker = self.run_dir(run_id) / CANCEL_FILE
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(now(), encoding="utf-8")

    def clear_cancel(self, run_id: str) -> None:
        """Remove the cancel marker (before a resume)."""
        (self.run_dir(run_id) / CANCEL_FILE).unlink(missing_ok=True)

    def cancel_requested(self, run_id: str) -> bool:
        """True once a cancel was requested for ``run_id``."""
        return (self.run_dir(run_id) / CANCEL_FILE).exists()


def checkpoints_dir(registry: Path) -> Path:
    """Where a registry keeps its checkpoints."""
    return registry / CHECKPOINTS_DIR


def list_checkpoints(registry: Path) -> list[CheckpointRecord]:
    """Every readable checkpoint of the registry, newest first, with the active one marked."""
    active = read_active(registry) or {}
    active_id = active.get("checkpoint_id")
    root = checkpoints_dir(registry)
    records = []
    if root.is_dir():
        for entry in root.iterdir():
            if not (entry / META_FILE).is_file():
                continue  # a checkpoint still being written, or debris
            try:
                meta = read_meta(entry)
            except EmbedderUnavailableError:
                continue
            records.append(
                CheckpointRecord(
                    checkpoint_id=meta.checkpoint_id,
                    kind=meta.kind,
                    model_id=meta.model_id,
                    base_model=meta.base_model,
                    created_at=meta.created_at,
                    run_id=meta.run_id,
                    active=meta.checkpoint_id == active_id,
                )
            )
    return sorted(records, key=lambda r: r.created_at, reverse=True)


def activate(
    registry: Path,
    checkpoint_id: str | None,
    *,
    base_model: str,
    actor: str,
    reason: str | None,
    operation: str,
) -> dict[str, Any]:
    """Make ``checkpoint_id`` (or the base model, for None) the registry's active embedder.

    ``active.json`` is replaced in one atomic rename, so a process starting at the same moment
    loads either the previous embedder or the new one. The previous state is kept in
    ``history`` and the change is appended to ``audit.jsonl``.
    """
    previous = read_active(registry) or {}
    history = list(previous.get("history", []))
    if previous:
        history.append({k: previous.get(k) for k in ("checkpoint_id", "deployed_at")})
    record = {
        "checkpoint_id": checkpoint_id,
        "checkpoint_dir": None if checkpoint_id is None else f"{CHECKPOINTS_DIR}/{checkpoint_id}",
        "base_model": base_model,
        "deployed_at": now(),
        "deployed_by": actor,
        "history": history[-50:],
    }
    write_json(registry / ACTIVE_FILE, record)
    append_audit(
        registry,
        {
            "operation": operation,
            "actor": actor,
            "reason": reason,
            "target_id": checkpoint_id or BASE_CHECKPOINT,
            "previous_id": previous.get("checkpoint_id"),
        },
    )
    return record

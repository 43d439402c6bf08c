"""``memvault finetune ...`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memvault.cli.app import main


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMVAULT_URL", "MEMVAULT_CONFIG", "MEMVAULT_FINETUNE_REGISTRY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_start_list_checkpoints_rollback(
    capsys: pytest.CaptureFixture[str], pairs_file: Path, registry: Path
) -> None:
    reg = str(registry)
    code, out, err = _run(
        capsys,
        "finetune",
        "start",
        "--registry",
        reg,
        "--pairs-file",
        str(pairs_file),
        "--trainer",
        "adapter",
    )
    assert code == 0, err
    assert "completed" in out.splitlines()[0]
    for stage in ("generate", "mine", "train", "evaluate", "deploy"):
        assert any(line.split()[:2] == [stage, "completed"] for line in out.splitlines())
    assert "fine-tuned  NDCG@10" in out
    assert "run `memvault reindex`" in out

    code, out, _ = _run(capsys, "finetune", "list", "--registry", reg, "--json")
    listing = json.loads(out)
    assert listing["total"] == 1
    run = listing["runs"][0]
    assert run["deployed"] is True

    code, out, _ = _run(capsys, "finetune", "checkpoints", "--registry", reg)
    assert out.splitlines()[0] == f"active: {run['checkpoint_id']}"

    code, _, err = _run(capsys, "finetune", "rollback", "base", "--registry", reg)
    assert code == 2
    assert err.strip().splitlines() == [
        "error: rollback_checkpoint is destructive: confirm it (confirm=True; --yes on the "
        "command line)"
    ]
    code, out, err = _run(
        capsys, "finetune", "rollback", "base", "--registry", reg, "--reason", "regressed", "--yes"
    )
    assert code == 0, err
    assert out.startswith("active embedder: base (sentence-transformers/all-MiniLM-L6-v2)")

    code, out, _ = _run(capsys, "finetune", "status", "--registry", reg, "--json")
    status = json.loads(out)
    assert status["active"] is False and status["run"]["run_id"] == run["run_id"]

    code, out, _ = _run(
        capsys, "finetune", "cancel", "--registry", reg, "--reason", "nothing", "--yes"
    )
    assert (code, out.strip()) == (0, "no fine-tune run is active")


def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "finetune", "list")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "no checkpoint registry" in err
    code, _, err = _run(
        capsys, "finetune", "start", "--registry", str(tmp_path / "r"), "--source-dir", "../up"
    )
    assert code == 2
    assert err.strip().splitlines() == [
        "error: invalid plan: source_dir: Value error, source_dir must not contain '..' segments"
    ]
    code, out, err = _run(
        capsys,
        "finetune",
        "preflight",
        "--registry",
        str(tmp_path / "r"),
        "--source-dir",
        str(tmp_path / "none"),
        "--trainer",
        "adapter",
    )
    assert code == 1
    assert "ERR source_dir" in out and "ERR llm" in out

"""``memvault config show`` and ``memvault init``: the resolved configuration with its sources,
and templates that load as written. Neither command opens a store."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memvault.cli.config_cmd import TEMPLATES, Template
from memvault.config import MemvaultConfig, load_config
from memvault.models import MemoryLevel


def test_show_without_configuration_uses_the_durable_default_store(run) -> None:
    result = run("config", "show", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["url"] == "~/.memvault/memvault.db"
    assert data["file"] is None
    assert data["config"]["level"] == "persistent"
    assert data["sources"]["level"]["kind"] == "default"
    assert data["sources"]["options.retention_days"] == {"kind": "default"}


def test_show_names_file_env_and_seed_keys(run, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "role.yaml"
    path.write_text(
        "apiVersion: initrunner/v1\nkind: Agent\nspec:\n  memory:\n"
        "    semantic: {max_memories: 70}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("MEMVAULT_OPTIONS__RETENTION_DAYS", "12")
    result = run("--config", str(path), "config", "show", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["config"]["options"]["max_per_category"]["semantic"] == 70
    assert data["sources"]["options.max_per_category.semantic"] == {
        "kind": "file",
        "where": str(path),
        "key": "semantic.max_memories",
    }
    assert data["sources"]["options.retention_days"] == {
        "kind": "env",
        "where": "MEMVAULT_OPTIONS__RETENTION_DAYS",
    }


def test_show_yaml_comments_each_value_and_loads_back(run, tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    result = run("--db", db, "config", "show")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"# store: {db}"
    assert any(line.strip().startswith("url: ") and "# argument" in line for line in lines)
    assert any(line.strip().startswith("dedup: true") and "# default" in line for line in lines)
    # The printed configuration is itself a memvault.yaml for the same store.
    shown = tmp_path / "shown.yaml"
    shown.write_text(result.out, encoding="utf-8")
    again = load_config(shown, env={})
    assert again.resolved_url() == db
    assert again == MemvaultConfig.model_validate(yaml.safe_load(result.out)["memory"])


def test_show_reports_a_bad_file_in_one_line(run, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("memory:\n  consolidation:\n    llm: {group_threshold: 2}\n", encoding="utf-8")
    result = run("--config", str(path), "config", "show")
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert "memory.consolidation.llm.group_threshold" in result.err
    assert "bad.yaml" in result.err


@pytest.mark.parametrize("template", list(Template))
def test_every_template_is_written_and_loads(run, tmp_path: Path, template: Template) -> None:
    out = tmp_path / f"{template.value}.yaml"
    result = run("init", "--template", template.value, "--output", str(out))
    assert result.code == 0, result.err
    assert out.read_text(encoding="utf-8") == TEMPLATES[template]
    assert "#" in TEMPLATES[template]  # commented
    cfg = load_config(out, env={})
    assert cfg.level is MemoryLevel.PERSISTENT
    shown = run("--config", str(out), "config", "show", "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["file"] == str(out)


def test_template_values(tmp_path: Path) -> None:
    def loaded(template: Template) -> MemvaultConfig:
        path = tmp_path / f"{template.value}.yaml"
        path.write_text(TEMPLATES[template], encoding="utf-8")
        return load_config(path, env={})

    assert loaded(Template.LOCAL).resolved_url() == "~/.memvault/memvault.db"
    assert loaded(Template.POSTGRES).backend == "postgresql"
    synthorg = loaded(Template.SYNTHORG)
    assert synthorg.backend == "mem0"
    assert dict(synthorg.options.retention_by_category) == {"episodic": 90, "working": 1}
    assert synthorg.options.agent_retention["example-agent"].retention_days == 30
    assert synthorg.resolved_url().startswith("mem0:///")
    initrunner = loaded(Template.INITRUNNER)
    assert initrunner.sessions.max_sessions == 10
    assert initrunner.options.max_per_category["episodic"] == 500
    assert initrunner.consolidation.strategy == "extract"


def test_init_writes_memvault_yaml_by_default(run, tmp_path: Path) -> None:
    result = run("init")
    assert result.code == 0, result.err
    assert (tmp_path / "memvault.yaml").read_text(encoding="utf-8") == TEMPLATES[Template.LOCAL]
    # ./memvault.yaml is found by every command.
    assert run("config", "show", "--json").json()["file"] == "memvault.yaml"


def test_init_refuses_to_overwrite_without_force(run, tmp_path: Path) -> None:
    target = tmp_path / "memvault.yaml"
    target.write_text("# mine\n", encoding="utf-8")
    result = run("init", "--template", "postgres")
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1
    assert "--force" in result.err
    assert target.read_text(encoding="utf-8") == "# mine\n"
    result = run("init", "--template", "postgres", "--force")
    assert result.code == 0, result.err
    assert target.read_text(encoding="utf-8") == TEMPLATES[Template.POSTGRES]


def test_init_refuses_an_unknown_template(run, tmp_path: Path) -> None:
    result = run("init", "--template", "mongo")
    assert result.code == 2
    assert not (tmp_path / "memvault.yaml").exists()

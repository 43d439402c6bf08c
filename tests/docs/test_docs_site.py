"""The docs site: every code block of every page runs, the generated pages are complete, and the
site builds with ``mkdocs build --strict`` (what ``make docs`` runs).

Blocks run by ``readme_harness``'s rules (its docstring): per ``##`` section, python blocks in
one interpreter, bash under ``-euo pipefail``, yaml written to ``./memvault.yaml``; ``text`` is
illustrative and not run.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from readme_harness import RUN, SKIPPED_LANGUAGES, Block, SectionRunner, by_section, parse_blocks

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "_hooks" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections() -> list[tuple[Path, str, list[Block]]]:
    found = []
    for page in PAGES:
        for title, blocks in by_section(parse_blocks(page.read_text(encoding="utf-8"))).items():
            if any(b.lang in RUN for b in blocks):
                found.append((page, title, blocks))
    return found


SECTIONS = _sections()


def _run(blocks: list[Block], root: Path, page: Path) -> None:
    runner = SectionRunner(root, readme=page)
    try:
        for block in blocks:
            runner.run(block)
    finally:
        runner.close()


@pytest.mark.parametrize(
    ("page", "title", "blocks"),
    SECTIONS,
    ids=[f"{p.relative_to(DOCS)}::{t}" for p, t, _ in SECTIONS],
)
def test_docs_section_runs(page: Path, title: str, blocks: list[Block], tmp_path: Path) -> None:
    _run(blocks, tmp_path, page)


def test_every_block_says_what_it_is_and_most_run() -> None:
    blocks = [(p, b) for p in PAGES for b in parse_blocks(p.read_text(encoding="utf-8"))]
    unknown = [f"{p.name}:{b.line}" for p, b in blocks if b.lang not in RUN | SKIPPED_LANGUAGES]
    assert unknown == []
    assert sum(b.lang == "python" for _, b in blocks) >= 14


def test_a_broken_block_fails(tmp_path: Path) -> None:
    page = tmp_path / "broken.md"
    page.write_text("## Broken\n\n```python\nassert 1 + 1 == 3\n```\n", encoding="utf-8")
    ((_, blocks),) = by_section(parse_blocks(page.read_text())).items()
    with pytest.raises(AssertionError):
        _run(blocks, tmp_path / "run", page)


def test_nav_lists_every_page_and_every_interface() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python", "#"))
    listed: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, str):
            listed.add(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(config["nav"])
    assert listed == {str(p.relative_to(DOCS)) for p in PAGES}
    for page in ("python.md", "cli.md", "rest.md", "mcp.md", "integrations.md", "configuration.md"):
        assert page in listed


def test_generated_configuration_lists_every_key() -> None:
    from pydantic import BaseModel

    from memvault.config import MemvaultConfig

    table = _generator().config()
    keys = set(re.findall(r"^\| `([^`]+)`", table, flags=re.MULTILINE))

    def expected(model: type[BaseModel], prefix: str) -> set[str]:
        out = set()
        for name, field in model.model_fields.items():
            key = f"{prefix}.{field.alias or name}"
            out.add(key)
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
                out |= expected(field.annotation, key)
        return out

    missing = expected(MemvaultConfig, "memory") - keys
    assert missing == set()
    assert "memory.options.agent_retention.<name>.retention_days" in keys


def test_generated_cli_rest_and_mcp_pages_cover_the_code() -> None:
    import typer

    from memvault.api.operations import OPERATIONS
    from memvault.cli.app import app
    from memvault.server.mcp import TOOL_NAMES

    gen = _generator()
    cli = gen.cli()
    for name in typer.main.get_command(app).commands:  # type: ignore[attr-defined]
        assert f"`memvault {name}`" in cli
    assert "--resume" in cli and "--base-url" in cli
    rest = gen.rest()
    for op in OPERATIONS:
        if op.http is not None:
            assert f"`{op.http.path}`" in rest
    mcp = gen.mcp()
    for tool in TOOL_NAMES:
        assert f"### `{tool}`" in mcp


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    config_page = (tmp_path / "site" / "configuration" / "index.html").read_text()
    assert "memory.sessions.max_resume_messages" in config_page
    api_page = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "Hybrid search of the agent" in api_page  # a docstring of AsyncMemory.search

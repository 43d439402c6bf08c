"""The README's Python quickstart holds in a store that already holds 50 unrelated facts.

A ranking that answers the quickstart in an empty store but loses it among a user's other facts
would make the README's first example a lie; this runs the block itself, as a user would, over
a store of the small-store suite's everyday facts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import Memory

ROOT = Path(__file__).resolve().parents[2]
POOL = json.loads((ROOT / "tests" / "fixtures" / "small_store_suite.json").read_text())["pool"]


def _quickstart() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Python quickstart", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the quickstart has no python block"
    return match.group(1)


def _run_quickstart(tmp_path: Path) -> list[str]:
    assert len(POOL) >= 50
    with Memory(str(tmp_path / "memvault.db")) as mem:
        mem.add_many([{"content": fact} for fact in POOL[:50]], agent_id="dev-1")
    run = subprocess.run(
        [sys.executable, "-c", _quickstart()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_the_quickstart_runs_among_fifty_unrelated_facts(tmp_path: Path) -> None:
    lines = _run_quickstart(tmp_path)
    assert lines, "the quickstart printed nothing"
    with Memory(str(tmp_path / "memvault.db")) as mem:
        # The off-topic question of the quickstart still injects nothing.
        assert mem.context("what is the capital of Peru?", agent_id="dev-1").text == ""
        ctx = mem.context("set up the new API service: Flask or Litestar?", agent_id="dev-1")
        assert len(ctx.entries) <= 3  # the unrelated facts stay out


@pytest.mark.xfail(
    strict=True,
    reason="issue 41: MiniLM puts 'which web framework?' closer to 'Recently took up "
    "watercolour painting' (cosine 0.19) than to 'Prefers Litestar over Flask' (0.16), and no "
    "word is shared; the answer needs knowledge the offline models lack",
)
def test_the_quickstart_answers_among_fifty_unrelated_facts(tmp_path: Path) -> None:
    lines = _run_quickstart(tmp_path)
    assert "Litestar" in lines[0]  # the first search hit is the framework preference
    with Memory(str(tmp_path / "memvault.db")) as mem:
        ctx = mem.context("set up the new API service: Flask or Litestar?", agent_id="dev-1")
        assert any("Litestar" in e.content for e in ctx.entries)

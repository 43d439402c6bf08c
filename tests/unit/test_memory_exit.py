"""A script that never closes its ``Memory`` still exits cleanly, with its data kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )


def test_unclosed_memories_exit_with_status_0_and_nothing_on_stderr(tmp_path: Path) -> None:
    db = tmp_path / "kept.db"
    wrote = _run(
        f"""
        from memvault import Memory
        memories = [Memory({str(db)!r}), Memory({str(tmp_path / "other.db")!r})]
        memories[0].add("Prefers dark mode", agent_id="a")
        memories[1].add("Uses vim", agent_id="b")
        print(len(memories[0].search("dark", agent_id="a")))
        """,
        tmp_path,
    )
    assert (wrote.returncode, wrote.stderr) == (0, ""), wrote.stderr
    assert wrote.stdout.strip() == "1"
    # Nothing was lost: the next process reads what the first one never closed.
    read = _run(
        f"""
        from memvault import Memory
        print(Memory({str(db)!r}).count(agent_id="a"))
        """,
        tmp_path,
    )
    assert (read.returncode, read.stderr, read.stdout.strip()) == (0, "", "1"), read.stderr

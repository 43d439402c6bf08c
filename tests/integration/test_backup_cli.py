"""The CLI of issue 21: ``memvault backup``, ``restore-backup``, ``check`` and ``repair``,
run as a user runs them (a subprocess of ``python -m memvault``) on a real SQLite store."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from memvault import Memory


def _memvault(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    if "MEMVAULT_CACHE_DIR" in os.environ:
        env["MEMVAULT_CACHE_DIR"] = os.environ["MEMVAULT_CACHE_DIR"]
    return subprocess.run(
        [sys.executable, "-m", "memvault", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_backup_check_repair_restore_from_the_command_line(tmp_path: Path) -> None:
    db = str(tmp_path / "store.db")
    with Memory(db) as mem:
        tea = mem.add("Alice drinks green tea every morning.", agent_id="alice")
        mem.add("The VPN endpoint is vpn2.example.com.", agent_id="alice")
    backup = tmp_path / "store.backup"
    made = _memvault("--db", db, "backup", str(backup), "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["memories"] == 2
    again = _memvault("--db", db, "backup", str(backup), cwd=tmp_path)
    assert again.returncode == 2
    assert len(again.stderr.strip().splitlines()) == 1 and "exists already" in again.stderr

    healthy = _memvault("--db", db, "check", cwd=tmp_path)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "no problems found" in healthy.stdout
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM memories_fts")
    broken = _memvault("--db", db, "check", "--json", cwd=tmp_path)
    assert broken.returncode == 1
    assert {f["code"] for f in json.loads(broken.stdout)["findings"]} == {"fts_missing"}
    fixed = _memvault("--db", db, "repair", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert "full-text rows: 2" in fixed.stdout
    assert _memvault("--db", db, "check", cwd=tmp_path).returncode == 0

    restored = str(tmp_path / "restored.db")
    back = _memvault("--db", restored, "restore-backup", str(backup), cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    with Memory(restored) as mem:
        hits = mem.search("what does Alice drink?", agent_id="alice", limit=1)
        assert [h.id for h in hits] == [tea]
    refused = _memvault("--db", restored, "restore-backup", str(backup), cwd=tmp_path)
    assert refused.returncode == 2 and "--replace" in refused.stderr

"""The blocking facades are generated from the async signatures, and the checked-in file is fresh.

``src/memvault/memory/_sync.py`` is written by ``scripts/generate_sync.py``; editing an async
signature without regenerating fails here, and so does a public member of ``AsyncMemory`` that
the generator's table does not place (wrapped, passed through, written in the base, omitted).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_sync", ROOT / "scripts/generate_sync.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_sync"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_sync_facade_is_what_the_generator_writes() -> None:
    gen = _generator()
    assert gen.TARGET.read_text(encoding="utf-8") == gen.render(), (
        "src/memvault/memory/_sync.py is stale: run python scripts/generate_sync.py"
    )


def test_the_checked_in_remote_client_is_what_the_generator_writes() -> None:
    gen = _generator()
    assert gen.REMOTE_TARGET.read_text(encoding="utf-8") == gen.render_remote(), (
        "src/memvault/remote.py is stale: run python scripts/generate_sync.py"
    )


def test_a_method_written_by_hand_and_generated_fails_the_generator(tmp_path: Path) -> None:
    gen = _generator()
    src = tmp_path / "src"
    for rel in ("memvault/memory/_async.py", "memvault/_remote.py"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        text = (ROOT / "src" / rel).read_text(encoding="utf-8")
        if rel == "memvault/_remote.py":  # RemoteBase writes search too
            marker = "    async def add_messages("
            assert marker in text
            text = text.replace(
                marker, "    async def search(self) -> None:\n        return None\n\n" + marker, 1
            )
        (src / rel).write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit, match="search"):
        gen.render_remote(src)


def test_every_public_coroutine_of_the_async_core_has_a_generated_blocking_method() -> None:
    gen = _generator()
    tree = ast.parse((ROOT / "src/memvault/memory/_async.py").read_text(encoding="utf-8"))
    core = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AsyncMemory")
    coroutines = {
        n.name for n in core.body if isinstance(n, ast.AsyncFunctionDef) and n.name[0] != "_"
    }
    generated = ast.parse(gen.TARGET.read_text(encoding="utf-8"))
    memory = next(n for n in generated.body if isinstance(n, ast.ClassDef) and n.name == "Memory")
    methods = {n.name for n in memory.body if isinstance(n, ast.FunctionDef)}
    spec = next(f for f in gen.FACADES if f.name == "Memory")
    assert coroutines - set(spec.omit) <= methods
    assert "search" in methods and "add" in methods


def test_a_member_the_table_does_not_place_fails_the_generator(tmp_path: Path) -> None:
    gen = _generator()
    # A copy of the source tree where AsyncMemory has one more public coroutine.
    src = tmp_path / "src"
    for rel in ("memvault/memory/_async.py", "memvault/memory/_sync_base.py"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        text = (ROOT / "src" / rel).read_text(encoding="utf-8")
        if rel.endswith("_async.py"):
            marker = "    async def stats(self)"
            assert marker in text
            text = text.replace(
                marker,
                "    def brand_new(self) -> int:\n        return 1\n\n" + marker,
                1,
            )
        (src / rel).write_text(text, encoding="utf-8")
    for rel in ("memvault/learning/engine.py", "memvault/agent/memory_tools.py"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text((ROOT / "src" / rel).read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SystemExit, match="brand_new"):
        gen.render(src)

"""Fixtures of the benchmark-script tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench_server(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``benchmarks/bench_server.py`` loaded as a module (it is a script, not a package)."""
    # The script imports its sibling ``_corpus`` the way every benchmark does.
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_server", BENCHMARKS / "bench_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_server", module)
    spec.loader.exec_module(module)
    return module

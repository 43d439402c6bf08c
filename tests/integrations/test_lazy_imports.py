"""``import memvault`` pulls in no framework, and a missing framework is a typed, one-line error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memvault import MemoryConfigError
from memvault.integrations._common import require

FRAMEWORKS = ("langgraph", "langchain_core", "pydantic_ai", "agents")


def test_import_memvault_imports_no_framework() -> None:
    code = (
        "import sys, memvault, memvault.integrations, memvault.cli.app\n"
        f"loaded = [m for m in {FRAMEWORKS!r} if m in sys.modules]\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


def test_missing_framework_names_the_extra() -> None:
    with pytest.raises(MemoryConfigError, match=r"pip install 'memvault\[nope\]'"):
        require("memvault_no_such_framework", "nope")

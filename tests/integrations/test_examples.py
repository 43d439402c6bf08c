"""Every adapter's example runs offline, as a user would run it, and prints the expected answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("langgraph_store.py", "answer: Alice lives in Porto"),
        ("pydantic_ai_agent.py", "run 2: [semantic |"),
        ("openai_agents_session.py", "the customer's plan is Pro"),
        ("langchain_retriever.py", "answer: Refunds are possible within 30 days"),
    ],
)
def test_example_runs_offline(script: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout, done.stdout

"""Fixtures of the fine-tune tests: a small jargon corpus, registries, and the real MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Invented internal jargon: every service has four passages, one per topic, written in the
# team's jargon, while people ask in plain words. The service name narrows a query to four
# passages; telling the topics apart needs the jargon-to-plain mapping, which the base model does
# not know and which carries over to services the trainer never saw (the held-out ones).
SERVICES = [
    "zeta",
    "orca",
    "kiln",
    "brine",
    "quill",
    "moss",
    "ember",
    "flint",
    "tern",
    "vale",
    "rook",
    "wren",
]
TOPICS = [
    (
        "{s} rotates its kelp token every {n} cycles.",
        ["how often are {s} credentials changed", "{s} secret renewal interval"],
    ),
    (
        "{s} runs its frobnicator quorum at {n}.",
        ["how many replicas must agree for {s}", "{s} consensus size"],
    ),
    (
        "The {s} lease lasts {n} blips.",
        ["lock timeout of {s}", "how long does {s} hold its lock"],
    ),
    (
        "{s} lives on the brine-{n} shard.",
        ["which storage partition holds {s}", "{s} database location"],
    ),
]


def jargon_pairs() -> list[dict[str, str]]:
    """Two plain-word queries per jargon passage: 48 passages, 96 pairs."""
    pairs = []
    for i, service in enumerate(SERVICES):
        for t, (passage, queries) in enumerate(TOPICS):
            text = passage.format(s=service.capitalize(), n=3 + (i * 7 + t * 5) % 40)
            for q in queries:
                pairs.append({"query": q.format(s=service), "passage": text})
    return pairs


@pytest.fixture
def pairs_file(tmp_path: Path) -> Path:
    """A JSON-lines file of 96 query/passage pairs (48 passages)."""
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in jargon_pairs()) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """An empty checkpoint registry directory (created by the manager)."""
    return tmp_path / "registry"


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    """Three small markdown documents."""
    root = tmp_path / "docs"
    (root / "adr").mkdir(parents=True)
    (root / "adr" / "0001-leases.md").write_text(
        "# Leases\n\nEvery service renews its frobnicator lease every ninety blips, and a lapsed "
        "lease fences the shard until an operator signs the kelp token again. Fencing is logged on "
        "the tern router, and the on-call engineer confirms it within one cycle.\n\n"
        "Short line.\n",
        encoding="utf-8",
    )
    (root / "runbook.txt").write_text(
        "When the brine shard alarms, drain the quill pool first, then rotate the kelp tokens "
        "of every service on that shard before restarting the orca relays.\n",
        encoding="utf-8",
    )
    (root / "notes.rst").write_text(
        "Ember deployments must pass the flint canary for two full cycles before the tern "
        "router moves production traffic over to them.\n",
        encoding="utf-8",
    )
    (root / "image.png").write_bytes(b"\x89PNG not a document")
    return root

"""Every YAML example of the seeds that configures memory loads with ``load_config``.

The examples are read from ``../shared/seeds/`` (a sibling of the checkout) when it is there,
and otherwise from the verbatim excerpts kept in ``tests/fixtures/seed_configs/``. The seed
texts are plain text: some examples are fenced with ```yaml, others follow a title line
unfenced and end at the first blank line; :func:`extract_examples` reads both forms.

Examples that are not memory configuration (SynthOrg's ``persistence:`` section of the
operational database) are listed and skipped; the org-memory backends the seed calls research
directions (``graph_rag``, ``temporal_kg``) are refused with a MemoryConfigError naming the key
rather than loaded and silently served by the default backend.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from memvault.config import MemvaultConfig, load_config
from memvault.errors import MemoryConfigError
from memvault.models import ConsolidationInterval, MemoryLevel

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / ".." / "shared" / "seeds"
COPIES = ROOT / "tests" / "fixtures" / "seed_configs"
SEED_FILES = ("000_f97c226e0ab347a6.txt", "001_5ab85fe58c23035a.txt", "002_37609845100e0f9c.txt")
"""The seeds with YAML examples (003 has none; 004's only config example is TOML)."""

_FENCED = re.compile(r"^```ya?ml[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_ANY_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
_TOP_KEY = re.compile(r"^(memory|org_memory|persistence):[ \t]*(#.*)?$")


@dataclass(frozen=True)
class Example:
    """One YAML example: the seed it is in, its position there, its text."""

    seed: str
    index: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.seed[:3]}-{self.index}"


def extract_examples(text: str) -> list[str]:
    """The YAML examples of a seed text, in order: fenced ```yaml blocks and unfenced blocks
    that start with a top-level ``memory:``/``org_memory:``/``persistence:`` line and run to the
    first blank or unindented line."""
    found: list[tuple[int, str]] = [
        (m.start(), textwrap.dedent(m.group(1))) for m in _FENCED.finditer(text)
    ]
    fenced_spans = [m.span() for m in _ANY_FENCE.finditer(text)]
    lines = text.splitlines(keepends=True)
    offset = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        inside = any(a <= offset < b for a, b in fenced_spans)
        if not inside and _TOP_KEY.match(line.rstrip("\n")):
            start = offset
            block = [line]
            j = i + 1
            while j < len(lines) and lines[j].strip() and lines[j][0] in " \t":
                block.append(lines[j])
                j += 1
            found.append((start, "".join(block)))
            offset += sum(len(x) for x in lines[i:j])
            i = j
            continue
        offset += len(line)
        i += 1
    return [body for _, body in sorted(found)]


def _source_dir() -> Path:
    return SEEDS if all((SEEDS / name).is_file() for name in SEED_FILES) else COPIES


def examples(directory: Path | None = None) -> list[Example]:
    """Every example of the seed files in ``directory`` (default: the seeds, else the copies)."""
    where = directory or _source_dir()
    return [
        Example(name, i, body)
        for name in SEED_FILES
        for i, body in enumerate(extract_examples((where / name).read_text(encoding="utf-8")))
    ]


def _load(example: Example, tmp_path: Path) -> MemvaultConfig:
    path = tmp_path / f"{example.id}.yaml"
    path.write_text(example.text, encoding="utf-8")
    return load_config(path, env={})


def _configures_memory(example: Example) -> bool:
    data = yaml.safe_load(example.text)
    return isinstance(data, dict) and "persistence" not in data


# -- what each example states ------------------------------------------------------------------


def _synthorg_memory(cfg: MemvaultConfig) -> None:
    assert cfg.backend == "mem0"
    assert cfg.level is MemoryLevel.PERSISTENT
    assert cfg.storage.data_dir == "/data/memory"
    assert cfg.storage.vector_store == "qdrant"
    assert cfg.storage.history_store == "sqlite"
    assert cfg.options.retention_days is None
    assert cfg.options.max_memories_per_agent == 10_000
    assert cfg.options.consolidation_interval is ConsolidationInterval.DAILY
    assert cfg.options.shared_knowledge_base is True
    assert cfg.resolved_url() == "mem0:///data/memory"


def _org_hybrid(cfg: MemvaultConfig) -> None:
    org = cfg.org_memory
    assert org.backend == "hybrid_prompt_retrieval"
    assert org.core_policies == (
        "All code must have 80%+ test coverage",
        "Use Litestar, not Flask",
        "PRs require 2 approvals",
    )
    assert org.extended_store.backend == "sqlite"
    assert org.extended_store.max_retrieved_per_query == 5
    assert org.write_access.policies == ("human",)
    assert org.write_access.adrs == ("human", "senior", "lead", "c_suite")


def _initrunner_quick_start(cfg: MemvaultConfig) -> None:
    assert cfg.sessions.max_sessions == 10
    assert cfg.sessions.max_resume_messages == 20
    assert dict(cfg.options.max_per_category) == {
        "semantic": 1000,
        "episodic": 500,
        "procedural": 100,
    }
    assert cfg.options.consolidation_interval is ConsolidationInterval.AFTER_SESSION
    assert cfg.consolidation.enabled is True
    assert cfg.consolidation.strategy == "extract"
    assert cfg.backend == "sqlite"  # InitRunner's sqlite-vec store, durable
    assert cfg.level is MemoryLevel.PERSISTENT


def _initrunner_bare(cfg: MemvaultConfig) -> None:
    assert cfg.options.max_per_category["semantic"] == 1000
    assert cfg.options.max_per_category["episodic"] == 500  # defaults for the other types
    assert cfg.options.disabled_categories == ()


def _initrunner_full(cfg: MemvaultConfig) -> None:
    _initrunner_quick_start(cfg)
    assert cfg.storage.url is None  # store_path: null keeps memvault's default store
    assert cfg.resolved_url() == "~/.memvault/memvault.db"
    assert cfg.embeddings.provider == ""
    assert cfg.embedder == "default"
    assert cfg.consolidation.max_episodes_per_run == 20
    assert cfg.consolidation.model_override is None


EXPECTED: dict[str, Any] = {
    "000-0": _synthorg_memory,
    "000-1": _synthorg_memory,
    "001-0": _synthorg_memory,
    "001-1": _org_hybrid,
    "001-2": "org_memory.backend",  # research direction graph_rag: refused, naming the key
    "001-3": "org_memory.backend",  # research direction temporal_kg
    "001-4": _synthorg_memory,
    "001-5": None,  # persistence: operational data, not memory configuration
    "002-0": _initrunner_quick_start,
    "002-1": _initrunner_bare,
    "002-2": _initrunner_full,
}


def test_every_example_is_accounted_for() -> None:
    found = examples()
    assert [e.id for e in found] == list(EXPECTED)
    skipped = [e.id for e in found if not _configures_memory(e)]
    assert skipped == [k for k, v in EXPECTED.items() if v is None]


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.id)
def test_seed_example_loads_as_written(example: Example, tmp_path: Path) -> None:
    expected = EXPECTED[example.id]
    if expected is None:
        assert not _configures_memory(example)
        return
    if isinstance(expected, str):
        with pytest.raises(MemoryConfigError) as info:
            _load(example, tmp_path)
        assert expected in str(info.value)
        assert f"{example.id}.yaml" in str(info.value)
        return
    expected(_load(example, tmp_path))


def test_the_copies_match_the_seeds() -> None:
    if _source_dir() != SEEDS:
        pytest.skip("the seeds are not checked out beside this repository")
    assert [e.text for e in examples(COPIES)] == [e.text for e in examples(SEEDS)]


def test_extraction_reads_both_forms() -> None:
    text = (
        "Title\nmemory:\n  level: project\n\nprose\n"
        "```yaml\nspec:\n  memory:\n    max_sessions: 3\n```\n"
        "```bash\nmemory:\n  not: yaml-example\n```\n"
    )
    assert extract_examples(text) == [
        "memory:\n  level: project\n",
        "spec:\n  memory:\n    max_sessions: 3\n",
    ]

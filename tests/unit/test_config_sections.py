"""The seeds' configuration keys: SynthOrg's consolidation section, InitRunner's ``spec.memory``,
the level rules, mem0/qdrant URLs, embeddings, provenance, and errors naming key and file.

Every call passes ``env=`` explicitly and runs in an empty working directory.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory, Memory
from memvault._ids import utc_now
from memvault.backends.embedder import build_embedder
from memvault.config import (
    MEMORY_URL,
    MemvaultConfig,
    load_config,
    normalize_section,
)
from memvault.config.sources import SourceKind, config_sources
from memvault.consolidation import ConsolidationConfig
from memvault.embeddings import HashingEmbedder, OpenAICompatibleEmbedder
from memvault.errors import MemoryConfigError
from memvault.models import ConsolidationInterval, MemoryLevel
from memvault.sessions import SessionConfig


@pytest.fixture(autouse=True)
def _empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str, name: str = "memvault.yaml") -> MemvaultConfig:
    return load_config(write(tmp_path / name, text), env={})


def config_error(tmp_path: Path, text: str, name: str = "bad.yaml") -> str:
    with pytest.raises(MemoryConfigError) as info:
        load_text(tmp_path, text, name)
    return str(info.value)


# -- SynthOrg: consolidation, retention, archival, dual mode, llm ------------------------------

SYNTHORG = """\
memory:
  backend: sqlite
  consolidation:
    strategy: llm
    max_memories_per_agent: 500
    retention:
      rules:
        - {category: episodic, retention_days: 30}
        - {category: working, retention_days: 1}
      default_retention_days: 365
    archival:
      enabled: true
      dual_mode: {enabled: false, threshold: 0.5, max_facts: 4}
    llm:
      group_threshold: 5
      temperature: 0.1
      max_summary_tokens: 200
      include_distillation_context: false
      max_entry_input_chars: 1000
      max_total_user_content_chars: 9000
  retention_overrides:
    bob:
      retention_days: 7
      retention_overrides:
        - {category: social, retention_days: 2}
"""


def test_synthorg_consolidation_section_maps_onto_options(tmp_path: Path) -> None:
    cfg = load_text(tmp_path, SYNTHORG)
    assert cfg.options.max_memories_per_agent == 500
    assert dict(cfg.options.retention_by_category) == {"episodic": 30, "working": 1}
    assert cfg.options.retention_days == 365
    assert cfg.options.agent_retention["bob"].retention_days == 7
    assert dict(cfg.options.agent_retention["bob"].by_category) == {"social": 2}
    assert cfg.consolidation.strategy == "llm"
    assert cfg.consolidation.archival.dual_mode.threshold == 0.5
    assert cfg.consolidation.archival.dual_mode.max_facts == 4


def test_llm_settings_become_the_consolidation_config(tmp_path: Path) -> None:
    built = load_text(tmp_path, SYNTHORG).consolidation.consolidation_config()
    assert built.group_threshold == 5
    assert built.temperature == 0.1
    assert built.max_summary_tokens == 200
    assert built.include_distillation_context is False
    assert built.max_entry_input_chars == 1000
    assert built.max_total_user_content_chars == 9000
    assert built.density_threshold == 0.5
    # Nothing configured: exactly the service's own defaults.
    assert MemvaultConfig().consolidation.consolidation_config() == ConsolidationConfig()


def test_retention_rules_may_be_a_mapping(tmp_path: Path) -> None:
    cfg = load_text(
        tmp_path, "memory:\n  consolidation:\n    retention:\n      rules: {episodic: 9}\n"
    )
    assert dict(cfg.options.retention_by_category) == {"episodic": 9}


def test_the_memvault_key_wins_over_the_seed_key(tmp_path: Path) -> None:
    text = """\
memory:
  options:
    max_memories_per_agent: 42
    retention_days: 10
    retention_by_category: {episodic: 3}
  consolidation:
    max_memories_per_agent: 500
    retention:
      rules: [{category: episodic, retention_days: 30}]
      default_retention_days: 365
"""
    cfg = load_text(tmp_path, text)
    assert cfg.options.max_memories_per_agent == 42
    assert cfg.options.retention_days == 10
    assert dict(cfg.options.retention_by_category) == {"episodic": 3}


def test_dual_mode_enabled_makes_it_the_default_strategy(tmp_path: Path) -> None:
    text = "memory:\n  consolidation:\n    archival:\n      dual_mode: {enabled: true}\n"
    assert load_text(tmp_path, text).consolidation.strategy == "dual_mode"
    text += "    strategy: simple\n"
    assert load_text(tmp_path, text).consolidation.strategy == "simple"


def test_the_scheduler_follows_the_consolidation_strategy(tmp_path: Path) -> None:
    cfg = load_text(tmp_path, "memory:\n  consolidation:\n    strategy: llm\n")
    assert cfg.maintenance.consolidation_strategy == "llm"
    text = (
        "memory:\n  consolidation: {strategy: llm}\n"
        "  maintenance: {consolidation_strategy: simple}\n"
    )
    assert load_text(tmp_path, text).maintenance.consolidation_strategy == "simple"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (
            "memory:\n  consolidation:\n    llm:\n      group_threshold: 2\n",
            "memory.consolidation.llm.group_threshold",
        ),
        (
            "memory:\n  consolidation:\n    archival:\n      enabled: false\n",
            "memory.consolidation.archival.enabled",
        ),
        ("memory:\n  consolidation:\n    strategy: magic\n", "memory.consolidation.strategy"),
        (
            "memory:\n  consolidation:\n    retention:\n      keep: 3\n",
            "memory.consolidation.retention.keep",
        ),
        (
            "memory:\n  consolidation:\n    retention:\n      rules: [{category: episodic}]\n",
            "memory.consolidation.retention.rules[0]",
        ),
        (
            "memory:\n  consolidation:\n    retention:\n"
            "      rules: [{category: dreams, retention_days: 3}]\n",
            "memory.consolidation.retention.rules.dreams",
        ),
        (
            "memory:\n  consolidation:\n    llm:\n      grup_threshold: 4\n",
            "memory.consolidation.llm.grup_threshold",
        ),
        (
            "memory:\n  retention_overrides:\n    bob: {days: 3}\n",
            "memory.retention_overrides.bob.days",
        ),
    ],
)
def test_a_wrong_seed_key_names_its_path_and_file(tmp_path: Path, text: str, path: str) -> None:
    message = config_error(tmp_path, text)
    assert path in message
    assert str(tmp_path / "bad.yaml") in message


def test_an_env_value_names_its_variable() -> None:
    env = {"MEMVAULT_CONSOLIDATION__LLM__GROUP_THRESHOLD": "2"}
    with pytest.raises(MemoryConfigError) as info:
        load_config(env=env)
    message = str(info.value)
    assert "memory.consolidation.llm.group_threshold" in message
    assert "$MEMVAULT_CONSOLIDATION__LLM__GROUP_THRESHOLD" in message


def test_consolidation_reaches_env_variables() -> None:
    env = {"MEMVAULT_CONSOLIDATION__STRATEGY": "dual_mode", "MEMVAULT_SESSIONS__MAX_SESSIONS": "4"}
    cfg = load_config(env=env)
    assert cfg.consolidation.strategy == "dual_mode"
    assert cfg.sessions.max_sessions == 4


# -- InitRunner: spec.memory -------------------------------------------------------------------

ROLE = """\
apiVersion: initrunner/v1
kind: Agent
metadata:
  name: assistant
spec:
  model: {provider: openai, name: gpt-5-mini}
  memory:
{memory}
"""


def role(tmp_path: Path, memory: str) -> Path:
    body = "\n".join("    " + line for line in memory.strip("\n").splitlines())
    return write(tmp_path / "role.yaml", ROLE.replace("{memory}", body))


def test_role_file_defaults_follow_initrunner(tmp_path: Path) -> None:
    cfg = load_config(role(tmp_path, "max_sessions: 10"), env={})
    sessions = SessionConfig(**cfg.sessions.model_dump())  # what the session manager takes
    assert sessions == SessionConfig(max_sessions=10, max_resume_messages=20)
    assert dict(cfg.options.max_per_category) == {
        "episodic": 500,
        "semantic": 1000,
        "procedural": 100,
    }
    assert cfg.options.consolidation_interval is ConsolidationInterval.AFTER_SESSION
    assert cfg.consolidation.strategy == "extract"
    assert cfg.consolidation.max_episodes_per_run == 20
    assert cfg.backend == "sqlite"
    # Durable like InitRunner's store, but at memvault's default path, not ~/.initrunner.
    assert cfg.level is MemoryLevel.PERSISTENT
    assert cfg.resolved_url() == "~/.memvault/memvault.db"


def test_role_file_keys_map_onto_memvault(tmp_path: Path) -> None:
    memory = """\
max_sessions: 3
max_resume_messages: 7
store_backend: sqlite-vec
store_path: {store}
episodic: {enabled: false, max_episodes: 50}
semantic: {max_memories: 60}
procedural: {enabled: false, max_procedures: 70}
consolidation:
  enabled: true
  interval: after_autonomous
  max_episodes_per_run: 5
  model_override: small-model
""".replace("{store}", str(tmp_path / "agent.db"))
    cfg = load_config(role(tmp_path, memory), env={})
    assert (cfg.sessions.max_sessions, cfg.sessions.max_resume_messages) == (3, 7)
    assert dict(cfg.options.max_per_category) == {
        "episodic": 50,
        "semantic": 60,
        "procedural": 70,
    }
    assert cfg.options.disabled_categories == ("episodic", "procedural")
    assert cfg.procedural.enabled is False
    assert cfg.options.consolidation_interval is ConsolidationInterval.AFTER_AUTONOMOUS
    assert cfg.consolidation.max_episodes_per_run == 5
    assert cfg.consolidation.model_override == "small-model"
    assert cfg.resolved_url() == str(tmp_path / "agent.db")


@pytest.mark.parametrize(
    ("memory", "cap"),
    [
        ("max_memories: 250", 250),  # deprecated key, semantic at its default: synced
        ("max_memories: 250\nsemantic: {max_memories: 1000}", 250),
        ("max_memories: 250\nsemantic: {max_memories: 40}", 40),  # semantic set: it wins
        ("max_memories: 1000\nsemantic: {max_memories: 40}", 40),
    ],
)
def test_deprecated_max_memories_syncs_as_the_seed_says(
    tmp_path: Path, memory: str, cap: int
) -> None:
    assert load_config(role(tmp_path, memory), env={}).options.max_per_category["semantic"] == cap


def test_bare_max_memories_loads_as_memvault_yaml(tmp_path: Path) -> None:
    cfg = load_text(tmp_path, "memory:\n  max_memories: 300\n")
    assert cfg.options.max_per_category["semantic"] == 300
    assert cfg.options.max_per_category["episodic"] == 500
    # Outside a role file no store is implied: the library default (session) stays.
    assert cfg.level is MemoryLevel.SESSION


def test_consolidation_disabled_means_never_scheduled(tmp_path: Path) -> None:
    text = (
        "memory:\n  options: {consolidation_interval: hourly}\n  consolidation: {enabled: false}\n"
    )
    cfg = load_text(tmp_path, text)
    assert cfg.options.consolidation_interval is ConsolidationInterval.NEVER
    assert cfg.consolidation.enabled is False


@pytest.mark.parametrize(
    ("memory", "path"),
    [
        ("semantic: {max_memories: lots}", "spec.memory.semantic.max_memories"),
        ("episodic: {max_episodez: 3}", "spec.memory.episodic.max_episodez"),
        ("episodic: {enabled: maybe}", "spec.memory.episodic.enabled"),
        ("store_backend: chroma", "spec.memory.store_backend"),
        ("max_sessions: 0", "spec.memory.max_sessions"),
        ("consolidation: {interval: sometimes}", "spec.memory.consolidation.interval"),
        ("embeddings: {provider: cohere}", "spec.memory.embeddings"),
        ("embeddings: {api_key_env: 'not a name'}", "spec.memory.embeddings.api_key_env"),
        ("colour: blue", "spec.memory.colour"),
    ],
)
def test_a_wrong_role_key_names_its_path_and_file(tmp_path: Path, memory: str, path: str) -> None:
    with pytest.raises(MemoryConfigError) as info:
        load_config(role(tmp_path, memory), env={})
    assert path in str(info.value)
    assert str(tmp_path / "role.yaml") in str(info.value)


def test_a_role_file_without_memory_gives_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path / "r.yaml", "apiVersion: initrunner/v1\nkind: Agent\nspec:\n  role: hi\n")
    assert load_config(path, env={}) == MemvaultConfig()


def test_normalizing_twice_changes_nothing() -> None:
    section = {"max_memories": 5, "consolidation": {"enabled": False, "retention": {"rules": {}}}}
    once, _ = normalize_section(section, role_file=True)
    assert normalize_section(once)[0] == once


# -- embeddings -------------------------------------------------------------------------------


def test_embeddings_base_url_gives_an_openai_compatible_embedder(tmp_path: Path) -> None:
    memory = """\
embeddings:
  provider: ""
  model: nomic-embed-text
  base_url: http://127.0.0.1:9/v1
  api_key_env: MY_EMBED_KEY
"""
    cfg = load_config(role(tmp_path, memory), env={})
    assert cfg.embedder == "openai:nomic-embed-text"
    assert "secret" not in cfg.model_dump_json()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MY_EMBED_KEY", "secret")
        embedder = build_embedder(cfg)
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder._url == "http://127.0.0.1:9/v1/embeddings"
    assert embedder._api_key == "secret"  # read from the variable when built, not stored
    assert embedder._api_key_env == "MY_EMBED_KEY"
    embedder.close()


def test_synthorg_embedder_mapping_is_read_as_embeddings(tmp_path: Path) -> None:
    text = "memory:\n  embedder: {provider: openai, model: text-embedding-3-large, dims: 1536}\n"
    cfg = load_text(tmp_path, text)
    assert cfg.embeddings.dims == 1536
    assert cfg.embedder == "openai:text-embedding-3-large"


def test_a_written_embedder_spec_wins_over_embeddings(tmp_path: Path) -> None:
    text = "memory:\n  embedder: hashing:32\n  embeddings: {provider: openai}\n"
    cfg = load_text(tmp_path, text)
    assert cfg.embedder == "hashing:32"
    embedder = build_embedder(cfg)
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.dimension == 32


# -- levels and URLs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "level", "url"),
    [
        ({}, MemoryLevel.SESSION, MEMORY_URL),
        ({"storage": {"url": "/srv/a.db"}}, MemoryLevel.PERSISTENT, "/srv/a.db"),
        ({"storage": {"data_dir": "/srv/d"}}, MemoryLevel.PERSISTENT, "/srv/d/memvault.db"),
        ({"backend": "sqlite"}, MemoryLevel.PERSISTENT, "~/.memvault/memvault.db"),
        ({"backend": "inmemory"}, MemoryLevel.SESSION, MEMORY_URL),
        ({"storage": {"url": "memory://"}}, MemoryLevel.SESSION, MEMORY_URL),
        ({"level": "session", "storage": {"url": "/srv/a.db"}}, MemoryLevel.SESSION, MEMORY_URL),
        ({"level": "none", "backend": "sqlite"}, MemoryLevel.NONE, MEMORY_URL),
        ({"level": "project"}, MemoryLevel.PROJECT, "./.memvault/memvault.db"),
    ],
)
def test_a_storage_location_says_durable(
    data: dict[str, object], level: MemoryLevel, url: str
) -> None:
    cfg = MemvaultConfig.model_validate(data)
    assert cfg.level is level
    assert cfg.resolved_url() == url
    # A dump loads back to the same store (the level is settled at validation).
    assert MemvaultConfig.model_validate(cfg.model_dump()).resolved_url() == url


def test_memvault_url_says_durable() -> None:
    cfg = load_config(env={"MEMVAULT_URL": "/srv/env.db"})
    assert cfg.level is MemoryLevel.PERSISTENT
    assert cfg.resolved_url() == "/srv/env.db"


def test_default_level_applies_only_when_nothing_is_said(tmp_path: Path) -> None:
    assert load_config(env={}, default_level="persistent").level is MemoryLevel.PERSISTENT
    session = write(tmp_path / "s.yaml", "memory:\n  level: session\n")
    assert load_config(session, env={}, default_level="persistent").level is MemoryLevel.SESSION
    env = {"MEMVAULT_LEVEL": "project"}
    assert load_config(env=env, default_level="persistent").level is MemoryLevel.PROJECT


def test_an_explicit_url_wins_unless_the_level_says_in_process() -> None:
    assert MemvaultConfig().resolved_url("/x.db") == "/x.db"
    assert MemvaultConfig(level=MemoryLevel.PERSISTENT).resolved_url("/x.db") == "/x.db"
    assert MemvaultConfig(level=MemoryLevel.SESSION).resolved_url("/x.db") == MEMORY_URL


@pytest.mark.parametrize(
    ("data", "url"),
    [
        ({"backend": "mem0"}, f"mem0://{Path.home()}/.memvault/mem0"),
        ({"backend": "mem0", "storage": {"data_dir": "/data/memory"}}, "mem0:///data/memory"),
        ({"backend": "mem0", "storage": {"url": "/srv/m0"}}, "mem0:///srv/m0"),
        ({"backend": "qdrant"}, f"qdrant://{Path.home()}/.memvault/qdrant"),
        ({"backend": "qdrant", "storage": {"data_dir": "/srv/q"}}, "qdrant:///srv/q"),
        ({"backend": "qdrant", "storage": {"url": "http://q:6333"}}, "qdrant+http://q:6333"),
        ({"backend": "qdrant", "storage": {"url": "qdrant+https://q"}}, "qdrant+https://q"),
    ],
)
def test_mem0_and_qdrant_urls(data: dict[str, object], url: str) -> None:
    cfg = MemvaultConfig.model_validate(data)
    assert cfg.level is MemoryLevel.PERSISTENT
    assert cfg.resolved_url() == url


def test_mem0_refuses_a_foreign_url(tmp_path: Path) -> None:
    text = "memory:\n  backend: mem0\n  storage: {url: 'postgresql://h/db'}\n"
    message = config_error(tmp_path, text)
    assert "cannot be used with backend mem0" in message
    assert "bad.yaml" in message


def test_new_sections_keep_configs_hashable(tmp_path: Path) -> None:
    first = load_text(tmp_path, SYNTHORG)
    second = load_text(tmp_path, SYNTHORG)
    assert first == second
    assert len({first, second}) == 1


# -- provenance -------------------------------------------------------------------------------


def test_sources_name_default_file_env_and_seed_key(tmp_path: Path) -> None:
    path = role(tmp_path, "semantic: {max_memories: 60}\nmax_sessions: 4")
    shown = config_sources(path, env={"MEMVAULT_OPTIONS__RETENTION_DAYS": "9"})
    src = shown.sources
    assert src["options.retention_days"].kind is SourceKind.ENV
    assert src["options.retention_days"].where == "MEMVAULT_OPTIONS__RETENTION_DAYS"
    assert src["options.max_per_category.semantic"].kind is SourceKind.FILE
    assert src["options.max_per_category.semantic"].where == str(path)
    assert src["options.max_per_category.semantic"].key == "semantic.max_memories"
    assert src["sessions.max_sessions"].key == "max_sessions"
    assert src["options.dedup"].kind is SourceKind.DEFAULT
    assert src["level"].kind is SourceKind.DERIVED
    assert shown.config.options.retention_days == 9


def test_sources_of_an_explicit_url() -> None:
    shown = config_sources(env={"MEMVAULT_URL": "/e.db"})
    assert shown.sources["storage.url"].where == "MEMVAULT_URL"
    shown = config_sources(env={}, url="/a.db", default_level="persistent")
    assert shown.sources["storage.url"].kind is SourceKind.ARGUMENT
    assert shown.url == "/a.db"


# -- Memory: level and consolidation defaults --------------------------------------------------


def test_memory_without_configuration_lives_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("MEMVAULT_URL", "MEMVAULT_CONFIG", "MEMVAULT_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    with Memory(embedder=HashingEmbedder(16)) as mem:
        assert mem.aio.location == MEMORY_URL or mem.aio.location.startswith("memory")
    path = tmp_path / "durable.db"
    with Memory(str(path), embedder=HashingEmbedder(16)) as mem:
        mem.add("kept on disk", agent_id="a")
    assert path.is_file()


def test_memory_with_an_explicit_session_level_ignores_the_path(tmp_path: Path) -> None:
    path = tmp_path / "never.db"
    cfg = MemvaultConfig(level=MemoryLevel.SESSION)
    with Memory(str(path), config=cfg, embedder=HashingEmbedder(16)) as mem:
        mem.add("in process only", agent_id="a")
    assert not path.exists()


async def _old_episodes(mem: AsyncMemory, count: int) -> None:
    old = utc_now() - timedelta(days=60)
    for i in range(count):
        await mem.add(
            f"episode {i}: deployed service {i} to staging on day {i}",
            agent_id="a",
            category="episodic",
            created_at=old + timedelta(hours=i),
        )


def test_consolidate_without_arguments_uses_the_configured_strategy(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    cfg = MemvaultConfig.model_validate(
        {"storage": {"url": str(path)}, "consolidation": {"strategy": "llm"}}
    )

    async def run() -> None:
        mem = AsyncMemory(str(path), config=cfg, embedder=HashingEmbedder(16))
        try:
            await _old_episodes(mem, 4)
            with pytest.raises(MemoryConfigError, match="needs an LLM"):
                await mem.consolidate(agent_id="a")
            simple = await mem.consolidate(agent_id="a", strategy="simple", dry_run=True)
            assert simple.strategy == "simple"
            assert simple.groups
        finally:
            await mem.close()

    asyncio.run(run())


@pytest.mark.parametrize(("threshold", "merged"), [(3, True), (5, False)])
def test_consolidate_uses_the_configured_group_threshold(
    tmp_path: Path, threshold: int, merged: bool
) -> None:
    path = tmp_path / f"t{threshold}.db"
    cfg = MemvaultConfig.model_validate(
        {"storage": {"url": str(path)}, "consolidation": {"llm": {"group_threshold": threshold}}}
    )

    async def run() -> bool:
        mem = AsyncMemory(str(path), config=cfg, embedder=HashingEmbedder(16))
        try:
            await _old_episodes(mem, 4)
            result = await mem.consolidate(agent_id="a", dry_run=True)
            return bool(result.groups)
        finally:
            await mem.close()

    assert asyncio.run(run()) is merged


def test_dual_mode_fact_limits_reach_the_extractive_op() -> None:
    """``archival.dual_mode.max_facts``/``anchor_chars`` configure the op dual_mode builds."""
    from memvault.config import MemvaultConfig
    from memvault.consolidation.service import build_op
    from memvault.llm.scripted import ScriptedLLM

    cfg = MemvaultConfig.model_validate(
        {"consolidation": {"archival": {"dual_mode": {"max_facts": 2, "anchor_chars": 40}}}}
    ).consolidation.consolidation_config()
    assert (cfg.extractive_max_facts, cfg.extractive_unit_chars) == (2, 40)
    op = build_op("dual_mode", llm=ScriptedLLM([]), config=cfg)
    extractive = op.extractive  # type: ignore[attr-defined]
    assert (extractive.max_facts, extractive.unit_chars) == (2, 40)


def test_an_embeddings_endpoint_reaches_the_opened_store(tmp_path: Path) -> None:
    """``embeddings.base_url`` opens stores with the OpenAI-compatible embedder, not MiniLM."""
    from memvault.backends.factory import open_backend
    from memvault.config import MemvaultConfig
    from memvault.embeddings import OpenAICompatibleEmbedder

    cfg = MemvaultConfig.model_validate(
        {
            "embeddings": {
                "provider": "openai",
                "model": "text-embedding-3-small",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_env": "MEMVAULT_TEST_NO_SUCH_KEY",
            }
        }
    )
    backend = open_backend(str(tmp_path / "m.db"), config=cfg)
    embedder = backend.embedder  # type: ignore[attr-defined]
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder._url == "http://127.0.0.1:9/v1/embeddings"


def test_zeph_section_names_load_as_memvaults() -> None:
    """Seed 004 calls tiered recall ``memflow`` and optical forgetting ``scrap_mem``."""
    from memvault.config import MemvaultConfig, normalize_section

    section, origins = normalize_section({"memflow": {"enabled": True}, "scrap_mem": {}})
    cfg = MemvaultConfig.model_validate(section)
    assert cfg.tiered_recall.enabled is True
    assert cfg.forgetting == MemvaultConfig().forgetting
    assert origins[("tiered_recall",)] == "memflow"

"""``memvault.config``: defaults, memvault.yaml, MEMVAULT_* overrides, validation, immutability.

Every call passes ``env=`` explicitly and runs in an empty working directory, so nothing depends
on the machine's environment or on a memvault.yaml lying around.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memvault.config import (
    DEFAULT_DB_PATH,
    InjectionStrategyName,
    MemvaultConfig,
    load_config,
)
from memvault.errors import MemoryConfigError
from memvault.models import ConsolidationInterval, MemoryLevel

DESIGN_DOC_YAML = """\
# memvault.yaml as in the design documents
memory:
  level: persistent
  backend: sqlite
  storage:
    data_dir: {data_dir}
    vector_store: sqlite-vec
    history_store: sqlite
  options:
    retention_days: 90
    max_memories_per_agent: 5000
    consolidation_interval: weekly
    shared_knowledge_base: false
"""


@pytest.fixture(autouse=True)
def _empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def design_file(tmp_path: Path) -> Path:
    return write(tmp_path / "design.yaml", DESIGN_DOC_YAML.format(data_dir=tmp_path / "data"))


# -- defaults and resolved_url -------------------------------------------------------------------


def test_defaults() -> None:
    cfg = load_config(env={})
    assert cfg == MemvaultConfig()
    # The seed: "default: session" (the library keeps memories in the process).
    assert cfg.level is MemoryLevel.SESSION
    assert cfg.backend is None
    assert cfg.storage.url is None
    assert cfg.options.retention_days is None
    assert cfg.options.max_memories_per_agent == 10_000
    assert cfg.options.consolidation_interval is ConsolidationInterval.DAILY
    assert cfg.options.shared_knowledge_base is True
    assert cfg.options.max_content_chars == 32_000
    assert cfg.embedder == "default"
    assert cfg.retrieval.preset == "default"
    assert cfg.retrieval.strategy is InjectionStrategyName.CONTEXT
    assert cfg.resolved_url() == "memory://"
    persistent = load_config(env={}, default_level="persistent")
    assert persistent.resolved_url() == DEFAULT_DB_PATH == "~/.memvault/memvault.db"


@pytest.mark.parametrize(
    ("data", "url"),
    [
        ({"level": "session"}, "memory://"),
        ({"level": "none"}, "memory://"),
        ({"backend": "inmemory"}, "memory://"),
        ({"level": "session", "storage": {"url": "/tmp/x.db"}}, "memory://"),
        ({"level": "project"}, "./.memvault/memvault.db"),
        ({"level": "persistent"}, "~/.memvault/memvault.db"),
        ({"storage": {"data_dir": "/srv/agents"}}, "/srv/agents/memvault.db"),
        ({"level": "project", "storage": {"data_dir": "/srv/p"}}, "/srv/p/memvault.db"),
        ({"storage": {"url": "sqlite:///a.db", "data_dir": "/srv/x"}}, "sqlite:///a.db"),
        ({"level": "project", "storage": {"url": "b.db"}}, "b.db"),
    ],
)
def test_resolved_url(data: dict[str, object], url: str) -> None:
    assert MemvaultConfig.model_validate(data).resolved_url() == url


def test_data_dir_expands_the_home_directory() -> None:
    cfg = MemvaultConfig.model_validate({"storage": {"data_dir": "~/mv"}})
    assert cfg.resolved_url() == str(Path.home() / "mv" / "memvault.db")


# -- the YAML file -------------------------------------------------------------------------------


def test_design_document_keys_load(design_file: Path, tmp_path: Path) -> None:
    cfg = load_config(design_file, env={})
    assert cfg.level is MemoryLevel.PERSISTENT
    assert cfg.backend == "sqlite"
    assert cfg.storage.data_dir == str(tmp_path / "data")
    assert cfg.storage.vector_store == "sqlite-vec"
    assert cfg.storage.history_store == "sqlite"
    assert cfg.options.retention_days == 90
    assert cfg.options.max_memories_per_agent == 5000
    assert cfg.options.consolidation_interval is ConsolidationInterval.WEEKLY
    assert cfg.options.shared_knowledge_base is False
    assert cfg.resolved_url() == str(tmp_path / "data" / "memvault.db")


def test_path_may_be_a_string(design_file: Path) -> None:
    assert load_config(str(design_file), env={}).options.retention_days == 90


def test_file_without_a_memory_section_is_read_as_the_section(tmp_path: Path) -> None:
    flat = write(tmp_path / "flat.yaml", "level: project\noptions:\n  retention_days: 7\n")
    cfg = load_config(flat, env={})
    assert cfg.level is MemoryLevel.PROJECT
    assert cfg.options.retention_days == 7


def test_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path / "empty.yaml", ""), env={}) == MemvaultConfig()
    assert load_config(write(tmp_path / "c.yaml", "# nothing\n"), env={}) == MemvaultConfig()


def test_memvault_yaml_in_the_working_directory_is_found() -> None:
    write(Path("memvault.yaml"), "memory:\n  level: project\n")
    assert load_config(env={}).level is MemoryLevel.PROJECT


def test_memvault_config_variable_names_the_file(design_file: Path) -> None:
    write(Path("memvault.yaml"), "memory:\n  options:\n    retention_days: 1\n")
    cfg = load_config(env={"MEMVAULT_CONFIG": str(design_file)})
    assert cfg.options.retention_days == 90  # the named file, not ./memvault.yaml


def test_explicit_path_beats_memvault_config(design_file: Path, tmp_path: Path) -> None:
    other = write(tmp_path / "other.yaml", "memory:\n  options:\n    retention_days: 3\n")
    cfg = load_config(other, env={"MEMVAULT_CONFIG": str(design_file)})
    assert cfg.options.retention_days == 3


# -- environment overrides -----------------------------------------------------------------------


def test_env_overrides_the_file(design_file: Path) -> None:
    env = {"MEMVAULT_OPTIONS__RETENTION_DAYS": "30", "MEMVAULT_LEVEL": "project"}
    cfg = load_config(design_file, env=env)
    assert cfg.options.retention_days == 30
    assert cfg.level is MemoryLevel.PROJECT
    # Keys the variables do not name keep the file's values.
    assert cfg.options.max_memories_per_agent == 5000
    assert cfg.storage.vector_store == "sqlite-vec"


def test_memvault_url_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "u.yaml", "memory:\n  storage:\n    url: /from/file.db\n")
    assert load_config(path, env={}).resolved_url() == "/from/file.db"
    cfg = load_config(path, env={"MEMVAULT_URL": "/from/env.db"})
    assert cfg.storage.url == "/from/env.db"
    assert cfg.resolved_url() == "/from/env.db"


def test_explicit_url_beats_env_and_file(design_file: Path) -> None:
    cfg = load_config(design_file, env={"MEMVAULT_URL": "/from/env.db"}, url="/explicit.db")
    assert cfg.storage.url == "/explicit.db"
    assert cfg.resolved_url() == "/explicit.db"
    assert cfg.options.retention_days == 90  # the rest still comes from the file


def test_env_values_are_parsed_to_their_types() -> None:
    env = {
        "MEMVAULT_OPTIONS__SHARED_KNOWLEDGE_BASE": "false",
        "MEMVAULT_OPTIONS__MAX_MEMORIES_PER_AGENT": "250",
        "MEMVAULT_OPTIONS__CONSOLIDATION_INTERVAL": "hourly",
        "MEMVAULT_RETRIEVAL__STRATEGY": "tool_based",
        "MEMVAULT_EMBEDDER": "hashing:64",
    }
    cfg = load_config(env=env)
    assert cfg.options.shared_knowledge_base is False
    assert cfg.options.max_memories_per_agent == 250
    assert cfg.options.consolidation_interval is ConsolidationInterval.HOURLY
    assert cfg.retrieval.strategy is InjectionStrategyName.TOOL_BASED
    assert cfg.embedder == "hashing:64"


def test_null_in_env_clears_a_value_of_the_file(design_file: Path) -> None:
    cfg = load_config(design_file, env={"MEMVAULT_OPTIONS__RETENTION_DAYS": "null"})
    assert cfg.options.retention_days is None


@pytest.mark.parametrize("spelling", ["null", "NULL", "None", "none", ""])
def test_every_null_spelling_clears_a_value(design_file: Path, spelling: str) -> None:
    cfg = load_config(design_file, env={"MEMVAULT_OPTIONS__RETENTION_DAYS": spelling})
    assert cfg.options.retention_days is None
    assert cfg.options.max_memories_per_agent == 5000


def test_env_reaches_mapping_keys_and_nested_models(design_file: Path) -> None:
    env = {
        "MEMVAULT_OPTIONS__MAX_PER_CATEGORY__EPISODIC": "100",
        "MEMVAULT_OPTIONS__AGENT_RETENTION__BOB__RETENTION_DAYS": "7",
        "MEMVAULT_BACKEND": "composite",
        "MEMVAULT_COMPOSITE__ROUTES__WORKING": "memory://",
        "MEMVAULT_level": "project",  # any case after the MEMVAULT_ prefix
    }
    cfg = load_config(design_file, env=env)
    assert dict(cfg.options.max_per_category) == {"episodic": 100}
    assert cfg.options.agent_retention["bob"].retention_days == 7
    assert cfg.composite.routes == {"working": "memory://"}
    assert cfg.level is MemoryLevel.PROJECT
    assert cfg.options.retention_days == 90  # still the file's
    assert load_config(env={"memvault_level": "project"}) == MemvaultConfig()  # prefix: upper


def test_memvault_url_beats_memvault_storage_url(design_file: Path) -> None:
    env = {"MEMVAULT_STORAGE__URL": "/storage.db", "MEMVAULT_URL": "/url.db"}
    assert load_config(design_file, env=env).storage.url == "/url.db"
    env = {"MEMVAULT_STORAGE__URL": "/storage.db"}
    assert load_config(design_file, env=env).storage.url == "/storage.db"


def test_a_whole_section_may_be_a_json_object() -> None:
    env = {"MEMVAULT_OPTIONS": '{"retention_days": 5}', "MEMVAULT_OPTIONS__DEDUP": "false"}
    cfg = load_config(env=env)
    assert cfg.options.retention_days == 5
    assert cfg.options.dedup is False


def test_a_section_that_is_not_json_names_the_variable() -> None:
    with pytest.raises(MemoryConfigError, match="MEMVAULT_STORAGE must be a JSON object") as info:
        load_config(env={"MEMVAULT_STORAGE": "[unclosed"})
    assert "memory.storage" in str(info.value)


def test_loaded_configs_equal_the_plain_model(design_file: Path) -> None:
    cfg = load_config(design_file, env={"MEMVAULT_LEVEL": "project"})
    assert type(cfg) is MemvaultConfig
    assert cfg == MemvaultConfig.model_validate(cfg.model_dump())


def test_unrelated_memvault_variables_are_ignored() -> None:
    env = {
        "MEMVAULT_CACHE_DIR": "/tmp/cache",
        "MEMVAULT_TEST_POSTGRES_URL": "postgresql://x",
        "MEMVAULT_EMBEDDINGS_API_KEY": "secret",
        "MEMVAULT_AGENT": "someone",
        "MEMVAULT_SOMETHING_ELSE": "1",
        "OTHER_LEVEL": "session",
        "HOME": "/root",
    }
    assert load_config(env=env) == MemvaultConfig()


def test_empty_memvault_url_is_ignored() -> None:
    assert load_config(env={"MEMVAULT_URL": ""}).storage.url is None


def test_the_real_environment_is_used_when_env_is_omitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMVAULT_LEVEL", "session")
    assert load_config().level is MemoryLevel.SESSION


# -- invalid configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "names"),
    [
        ("memory:\n  options:\n    retention_days: -1\n", "memory.options.retention_days"),
        ("memory:\n  options:\n    retention_days: 0\n", "memory.options.retention_days"),
        ("memory:\n  options:\n    retention_dayz: 5\n", "memory.options.retention_dayz"),
        ("memory:\n  colour: blue\n", "memory.colour"),
        ("memory:\n  level: bogus\n", "memory.level"),
        ("memory:\n  backend: mongodb\n", "memory.backend"),
        ("memory:\n  storage:\n    synchronous: off\n", "memory.storage.synchronous"),
        ("memory:\n  options:\n    consolidation_interval: yearly\n", "consolidation_interval"),
        ("memory:\n  options:\n    max_memories_per_agent: lots\n", "max_memories_per_agent"),
        ("memory:\n  options:\n    max_content_chars: 0\n", "memory.options.max_content_chars"),
        ("memory:\n  retrieval:\n    strategy: telepathy\n", "memory.retrieval.strategy"),
    ],
)
def test_invalid_value_names_the_key(tmp_path: Path, yaml_text: str, names: str) -> None:
    path = write(tmp_path / "bad.yaml", yaml_text)
    with pytest.raises(MemoryConfigError, match="invalid configuration") as info:
        load_config(path, env={})
    assert names in str(info.value)


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"MEMVAULT_OPTIONS__RETENTION_DAYS": "-1"}, "memory.options.retention_days"),
        ({"MEMVAULT_OPTIONS__RETENTION_DAYS": "soon"}, "memory.options.retention_days"),
        ({"MEMVAULT_OPTIONS__RETENTON_DAYS": "3"}, "memory.options.retenton_days"),
        ({"MEMVAULT_LEVEL": "forever"}, "memory.level"),
    ],
)
def test_invalid_env_value_names_the_key(env: dict[str, str], names: str) -> None:
    with pytest.raises(MemoryConfigError) as info:
        load_config(env=env)
    assert names in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- level: project\n- level: session\n", "must hold a mapping"),
        ("just a string\n", "must hold a mapping"),
        ("memory: [1, 2]\n", "'memory'"),
        ("memory:\n  level: [unclosed\n", "not valid YAML"),
        ("memory:\n\tlevel: project\n", "not valid YAML"),
    ],
)
def test_malformed_file_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "broken-config.yaml", text)
    with pytest.raises(MemoryConfigError) as info:
        load_config(path, env={})
    assert message in str(info.value)
    assert "broken-config.yaml" in str(info.value)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="cannot read configuration file") as info:
        load_config(tmp_path / "absent.yaml", env={})
    assert "absent.yaml" in str(info.value)


def test_missing_file_named_by_memvault_config(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match=r"gone\.yaml"):
        load_config(env={"MEMVAULT_CONFIG": str(tmp_path / "gone.yaml")})


def test_directory_instead_of_a_file(tmp_path: Path) -> None:
    with pytest.raises(MemoryConfigError, match="cannot read configuration file"):
        load_config(tmp_path, env={})


def test_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("memory:\n  level: project  # café\n".encode("latin-1"))
    with pytest.raises(MemoryConfigError, match=r"latin1\.yaml"):
        load_config(path, env={})


def test_config_error_is_chained_to_the_validation_error(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", "memory:\n  level: bogus\n")
    with pytest.raises(MemoryConfigError) as info:
        load_config(path, env={})
    assert isinstance(info.value.__cause__, ValidationError)


# -- immutability --------------------------------------------------------------------------------


def test_config_objects_are_frozen(design_file: Path) -> None:
    cfg = load_config(design_file, env={})
    with pytest.raises(ValidationError):
        cfg.level = MemoryLevel.SESSION  # type: ignore[misc]
    with pytest.raises(ValidationError):
        cfg.options.retention_days = 1  # type: ignore[misc]
    with pytest.raises(ValidationError):
        cfg.storage.url = "/elsewhere.db"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        cfg.retrieval.preset = "dense"  # type: ignore[misc]
    assert cfg.level is MemoryLevel.PERSISTENT
    assert cfg.options.retention_days == 90


def test_configs_are_hashable_values(design_file: Path) -> None:
    first = load_config(design_file, env={})
    second = load_config(design_file, env={})
    assert first == second
    assert hash(first) == hash(second)
    assert len({first, second}) == 1
    assert first != load_config(design_file, env={"MEMVAULT_LEVEL": "project"})

"""Config keys of the seeds that used to load and do nothing now act (issue 45 A2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.config import MemvaultConfig, load_config
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.llm import ScriptedLLM, with_model
from memvault.protocols import Embedder

ROLE = """\
spec:
  memory:
    store_path: {path}
    episodic:
      enabled: false
    semantic:
      max_memories: 42
    consolidation:
      model_override: cheap-model
"""


def _config(tmp_path: Path, text: str) -> MemvaultConfig:
    path = tmp_path / "role.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, env={})


async def test_initrunner_keys_switch_types_off_cap_tools_pick_the_model_and_make_the_dir(
    tmp_path: Path, minilm: Embedder
) -> None:
    store = tmp_path / "nested" / "dir" / "agent.db"
    config = _config(tmp_path, ROLE.format(path=store))
    llm = ScriptedLLM(["The user drinks tea and coffee."], repeat_last=True)
    async with AsyncMemory(config=config, embedder=minilm, llm=llm) as mem:
        # store_path: the directory is created (InitRunner: "created automatically").
        await mem.add("The user drinks tea", agent_id="dev")
        assert store.is_file()
        # episodic.enabled: false refuses episodic writes and offers no record_episode tool.
        with pytest.raises(MemoryValidationError, match=r"episodic memories are switched off"):
            await mem.add("Deployed on Monday", agent_id="dev", category="episodic")
        tools = mem.memory_tools()
        names = {t.name for t in tools.get_tool_definitions()}
        assert "record_episode" not in names and "remember" in names
        assert tools.config.max_memories == 42
        # consolidation.model_override: the consolidation calls ask that model.
        for text in ("The user drinks tea daily", "The user drinks coffee"):
            await mem.add(text, agent_id="dev")
        before = len(llm.models)  # the write path's own calls ask the LLM's model
        await mem.consolidate(agent_id="dev", strategy="llm", min_age_days=0)
    assert llm.models[before:] and set(llm.models[before:]) == {"cheap-model"}


async def test_summarization_model_is_asked_by_dual_mode(tmp_path: Path, minilm: Embedder) -> None:
    config = _config(
        tmp_path,
        "memory:\n  consolidation:\n    model_override: other\n"
        "    archival:\n      dual_mode:\n        summarization_model: summariser\n",
    )
    llm = ScriptedLLM(["The user drinks tea and coffee."], repeat_last=True)
    async with AsyncMemory(str(tmp_path / "d.db"), config=config, embedder=minilm, llm=llm) as mem:
        for text in (
            "The user drinks tea",
            "Our build server runs on Debian 12",
            "The office closes at 6pm on Fridays",
        ):
            await mem.add(text, agent_id="dev", category="episodic")
        before = len(llm.models)
        await mem.consolidate(agent_id="dev", strategy="dual_mode", min_age_days=0)
    assert set(llm.models[before:]) <= {"summariser"}


def test_a_provider_that_cannot_switch_models_is_a_config_error() -> None:
    class Fixed:
        model_id = "fixed"

    with pytest.raises(MemoryConfigError, match=r"consolidation\.model_override"):
        with_model(Fixed(), "other", key="consolidation.model_override")  # type: ignore[arg-type]
    llm = ScriptedLLM(["x"])
    assert with_model(llm, None, key="k") is llm
    assert with_model(llm, "m2", key="k").model_id == "m2"

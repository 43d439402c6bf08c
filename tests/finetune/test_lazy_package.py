"""memvault.finetune imports its submodules lazily, so memvault.config can import its config."""

from __future__ import annotations

import subprocess
import sys

import pytest

import memvault.config
import memvault.finetune
from memvault.finetune import config as finetune_config


def _fresh(code: str) -> str:
    # A fresh interpreter: this process has long since imported everything.
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


def test_importing_the_package_loads_no_heavy_submodule() -> None:
    out = _fresh(
        "import sys, memvault.finetune\n"
        "print(sorted(m for m in sys.modules if m.startswith('memvault.finetune.')))"
    )
    # Neither memvault's own package import (its names load on first use) nor this package's
    # loads a submodule: the config, pipeline, manager, runners and trainers wait for first use.
    assert out == "[]"


def test_memvault_config_needs_no_finetune_module_and_both_share_one_class() -> None:
    # The fine_tune section lives with the other section models (memvault.config.finetune): the
    # configuration imports no feature package, and the fine-tune records module re-exports
    # the same class, so there is one class whichever name is used.
    out = _fresh(
        "import sys, memvault.config as c\n"
        "before = 'memvault.finetune' in sys.modules\n"
        "import memvault.finetune.config as f\n"
        "print(before, c.EmbeddingFineTuneConfig is f.EmbeddingFineTuneConfig)"
    )
    assert out == "False True"


def test_names_resolve_on_first_use_to_their_submodule_objects() -> None:
    from memvault.finetune import manager, runner

    assert memvault.config.EmbeddingFineTuneConfig is memvault.finetune.EmbeddingFineTuneConfig
    assert memvault.finetune.EmbeddingFineTuneConfig is finetune_config.EmbeddingFineTuneConfig
    assert memvault.finetune.FineTuneManager is manager.FineTuneManager
    assert memvault.finetune.SubprocessRunner is runner.SubprocessRunner
    for name in memvault.finetune.__all__:
        assert getattr(memvault.finetune, name) is not None
        assert name in dir(memvault.finetune)


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        memvault.finetune.Nope  # noqa: B018
    with pytest.raises(ImportError):
        from memvault.finetune import Nope  # type: ignore[attr-defined]  # noqa: F401

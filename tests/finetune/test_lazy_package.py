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


def test_memvault_config_imports_the_finetune_config_module_normally() -> None:
    # A normal import runs the package first (the old file-path loader skipped it), and there
    # is one module object, one class.
    out = _fresh(
        "import sys, memvault.config as c\n"
        "m = sys.modules['memvault.finetune.config']\n"
        "print('memvault.finetune' in sys.modules, m.__spec__.parent,\n"
        "      c.EmbeddingFineTuneConfig is m.EmbeddingFineTuneConfig)"
    )
    assert out == "True memvault.finetune True"


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

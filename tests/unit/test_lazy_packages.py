"""Every public name of a package that loads its contents lazily resolves.

Packages whose ``__init__`` defers imports (a module ``__getattr__``) name each attribute's
home module as a string, which no import checker follows: a module that moves or is renamed
leaves a name that fails only when someone asks for it. This walks them all.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _lazy_packages() -> list[str]:
    found = []
    for init in sorted((SRC / "memvault").rglob("__init__.py")):
        if "def __getattr__" in (text := init.read_text(encoding="utf-8")) or (
            "lazy_attributes(" in text
        ):
            found.append(".".join(init.parent.relative_to(SRC).parts))
    return found


def test_the_walk_finds_the_lazy_packages() -> None:
    assert {"memvault", "memvault.graph", "memvault.maintenance"} <= set(_lazy_packages())


@pytest.mark.parametrize("package", _lazy_packages())
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", ())
    assert names, f"{package} declares no __all__"
    missing = []
    for name in names:
        try:
            getattr(module, name)
        except (AttributeError, ImportError) as exc:
            missing.append(f"{name}: {exc}")
    assert not missing, f"{package}: " + "; ".join(missing)

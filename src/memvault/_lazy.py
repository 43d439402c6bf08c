"""Lazy package attributes: a package's public names load from their submodules on first use.

A package that lists ``{name: submodule}`` sets ``__getattr__ = lazy_attributes(__name__,
table)`` (PEP 562): ``import memvault.graph`` then loads no submodule, and ``from memvault.graph
import GraphMemory`` loads just the one that defines it. Type checkers read the names from the
package's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` resolving each name of ``homes`` from the module
    named there (a full dotted name) and keeping it in the package, so the hook runs once per
    name; any other name raises AttributeError as a missing attribute does."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__

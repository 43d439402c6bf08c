"""The public surface of ``memvault``: exported names, the error tree, docstrings."""

from __future__ import annotations

import builtins
import importlib.metadata
import inspect

import pytest

import memvault
import memvault.errors
from memvault.errors import (
    DimensionMismatchError,
    EmbedderUnavailableError,
    EmbeddingModelChangedError,
    MemoryAuthenticationError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConflictError,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryRetrievalError,
    MemoryStoreError,
    MemoryValidationError,
    MemvaultError,
)

EXPECTED_ALL = [
    "AsyncMemory",
    "ConsolidationInterval",
    "DimensionMismatchError",
    "EmbedderUnavailableError",
    "EmbeddingModelChangedError",
    "Memory",
    "MemoryAuthenticationError",
    "MemoryCapabilityError",
    "MemoryCategory",
    "MemoryConfigError",
    "MemoryConflictError",
    "MemoryConnectionError",
    "MemoryContext",
    "MemoryEntry",
    "MemoryLevel",
    "MemoryMetadata",
    "MemoryNotFoundError",
    "MemoryPermissionError",
    "MemoryQuery",
    "MemoryRateLimitError",
    "MemoryRetrievalError",
    "MemoryScope",
    "MemoryStoreError",
    "MemoryStoreRequest",
    "MemoryValidationError",
    "MemvaultConfig",
    "MemvaultError",
    "ScoreBreakdown",
    "WriteResult",
    "__version__",
    "load_config",
]

ERROR_CLASSES = [
    MemoryConnectionError,
    MemoryStoreError,
    MemoryValidationError,
    MemoryRetrievalError,
    MemoryNotFoundError,
    MemoryConfigError,
    EmbeddingModelChangedError,
    DimensionMismatchError,
    EmbedderUnavailableError,
    MemoryCapabilityError,
    MemoryConflictError,
    MemoryAuthenticationError,
    MemoryPermissionError,
]


def test_all_is_exactly_the_expected_sorted_list() -> None:
    assert memvault.__all__ == EXPECTED_ALL
    assert memvault.__all__ == sorted(memvault.__all__)
    assert len(set(memvault.__all__)) == len(memvault.__all__)


@pytest.mark.parametrize("name", EXPECTED_ALL)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(memvault, name) is not None


def test_version_matches_the_installed_distribution() -> None:
    assert memvault.__version__ == importlib.metadata.version("memvault")


def test_memvault_error_is_ours_not_the_builtin() -> None:
    assert memvault.MemvaultError is memvault.errors.MemoryError
    assert memvault.errors.MemoryError is not builtins.MemoryError
    assert not issubclass(memvault.MemvaultError, builtins.MemoryError)
    assert not issubclass(builtins.MemoryError, memvault.MemvaultError)
    assert "MemoryError" not in memvault.__all__
    assert "MemoryError" not in memvault.errors.__all__


def test_star_import_does_not_shadow_the_builtin_memory_error() -> None:
    for module in ("memvault", "memvault.errors"):
        namespace: dict[str, object] = {}
        exec(f"from {module} import *", namespace)
        assert "MemoryError" not in namespace
        assert eval("MemoryError", namespace) is builtins.MemoryError
    namespace = {}
    exec("from memvault import *", namespace)
    assert set(EXPECTED_ALL) <= set(namespace)


def test_every_error_is_exported_from_both_modules() -> None:
    for cls in ERROR_CLASSES:
        assert getattr(memvault, cls.__name__) is cls
        assert cls.__name__ in memvault.errors.__all__
    assert "MemvaultError" in memvault.errors.__all__


@pytest.mark.parametrize("cls", ERROR_CLASSES)
def test_every_error_is_a_memvault_error(cls: type[Exception]) -> None:
    assert issubclass(cls, MemvaultError)
    assert issubclass(cls, Exception)
    assert not issubclass(cls, builtins.MemoryError)


def test_error_tree_relations() -> None:
    assert issubclass(MemoryValidationError, MemoryStoreError)
    assert issubclass(MemoryValidationError, ValueError)
    assert issubclass(DimensionMismatchError, EmbeddingModelChangedError)
    assert issubclass(EmbeddingModelChangedError, MemoryConfigError)
    assert issubclass(EmbedderUnavailableError, MemoryConfigError)
    assert issubclass(MemoryConflictError, MemoryStoreError)
    assert not issubclass(MemoryPermissionError, MemoryAuthenticationError)
    # Siblings stay siblings: catching one family never catches another.
    assert not issubclass(MemoryNotFoundError, MemoryRetrievalError)
    assert not issubclass(MemoryConnectionError, MemoryStoreError)
    assert not issubclass(MemoryStoreError, ValueError)
    assert not issubclass(MemoryConfigError, MemoryStoreError)
    assert not issubclass(EmbedderUnavailableError, EmbeddingModelChangedError)


def test_validation_error_is_caught_by_value_error_handlers() -> None:
    with pytest.raises(ValueError, match="bad input"):
        raise MemoryValidationError("bad input")


def test_dimension_mismatch_carries_both_models_and_dimensions() -> None:
    err = DimensionMismatchError(
        "vectors differ",
        stored_model="a",
        configured_model="b",
        stored_dimension=384,
        configured_dimension=768,
    )
    assert str(err) == "vectors differ"
    assert (err.stored_model, err.configured_model) == ("a", "b")
    assert (err.stored_dimension, err.configured_dimension) == (384, 768)
    with pytest.raises(EmbeddingModelChangedError):
        raise err


@pytest.mark.parametrize("name", [n for n in EXPECTED_ALL if n != "__version__"])
def test_every_public_name_has_a_docstring_ending_its_first_line_with_a_period(
    name: str,
) -> None:
    obj = getattr(memvault, name)
    # The object's own docstring: a class must not borrow its base class's text.
    doc = obj.__doc__ if inspect.isclass(obj) else inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    first_line = inspect.cleandoc(doc).splitlines()[0].strip()
    assert first_line, f"{name}'s docstring starts with a blank line"
    assert first_line.endswith("."), f"{name}: {first_line!r}"

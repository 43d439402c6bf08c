"""Shared fixtures: the real bundled embedding model (loaded once per test session), the
PostgreSQL server, throwaway schemas, conversation stores of every kind, and an environment
cleared of the machine's memvault settings.

Test tiers: every test that needs PostgreSQL, a subprocess, a live HTTP server or a browser is
marked ``postgres`` / ``subprocess`` / ``live_server`` / ``browser`` here at collection (see
:func:`pytest_collection_modifyitems`), and each of those is also marked ``slow``. ``make test``
runs everything; ``make check`` runs ``-m "not slow"`` over the unit and contract tests.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from memvault.backends.sqlite import _blas
from memvault.embeddings import default_embedder
from memvault.protocols import Embedder

if TYPE_CHECKING:
    from memvault.conversation import SQLConversationStore

ConversationStoreFactory = Callable[[str, Callable[[], datetime] | None], "SQLConversationStore"]
"""``conversation_stores(kind, clock)``: a fresh conversation store of ``kind``."""


TESTS = Path(__file__).resolve().parent

# What marks a test, found in the code it runs (the test, its fixtures, and the helpers of
# tests/ they call, followed through names): a name it uses, or the module an object it uses
# comes from.
_NEEDS_NAMES: dict[str, frozenset[str]] = {
    "subprocess": frozenset(
        {"subprocess", "Popen", "create_subprocess_exec", "create_subprocess_shell"}
        | {"multiprocessing", "ProcessPoolExecutor", "fork", "forkpty", "posix_spawn"}
        | {"wait_until_serving"}
    ),
    "live_server": frozenset({"run_app", "uvicorn"}),
    "browser": frozenset({"playwright", "sync_playwright", "async_playwright", "chromium"}),
}
_NEEDS_MODULES: dict[str, tuple[str, ...]] = {
    "subprocess": ("subprocess", "multiprocessing", "asyncio.subprocess"),
    "live_server": ("uvicorn", "live_server"),
    "browser": ("playwright",),
}
# Fixtures that bring the need with them (whatever the code that uses them).
_NEEDS_FIXTURES: dict[str, frozenset[str]] = {
    "postgres": frozenset({"postgres_url", "pg_schemas"}),
    "live_server": frozenset({"live_server", "server", "ui_server"}),
}
SLOW_NEEDS = ("postgres", "subprocess", "live_server", "browser")


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _in_tests(obj: object) -> bool:
    try:
        path = inspect.getsourcefile(obj)  # type: ignore[arg-type]
    except (TypeError, OSError):
        return False
    return path is not None and Path(path).resolve().is_relative_to(TESTS)


def _needs_of(obj: object, seen: dict[int, set[str]]) -> set[str]:
    """The needs (``subprocess``, ``live_server``, ``browser``) of a test-suite function or
    class: its own names, and those of the test-suite functions and classes it refers to."""
    key = id(obj)
    if key in seen:
        return seen[key]
    found: set[str] = set()
    seen[key] = found
    functions: list[FunctionType] = []
    if isinstance(obj, type):
        functions = [f for f in vars(obj).values() if isinstance(f, FunctionType)]
        for base in obj.__mro__[1:]:
            if _in_tests(base):
                found |= _needs_of(base, seen)
    elif isinstance(obj, FunctionType):
        functions = [obj]
    for function in functions:
        function = inspect.unwrap(function)
        if not isinstance(function, FunctionType):
            continue
        for code in _codes(function.__code__):
            for name in code.co_names:
                for need, names in _NEEDS_NAMES.items():
                    if name in names:
                        found.add(need)
                value: Any = function.__globals__.get(name)
                if value is None:
                    continue
                module = value.__name__ if isinstance(value, ModuleType) else None
                module = module or getattr(value, "__module__", None) or ""
                for need, prefixes in _NEEDS_MODULES.items():
                    if any(module == p or module.startswith(p + ".") for p in prefixes):
                        found.add(need)
                if isinstance(value, FunctionType | type) and _in_tests(value):
                    found |= _needs_of(value, seen)
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests that need PostgreSQL, a subprocess, a live server or a browser (and
    so ``slow``); ``make check`` deselects ``slow``. A test is found by its fixtures (by name,
    or a ``postgres`` parameter of one), and by the code it and its fixtures run."""
    seen: dict[int, set[str]] = {}
    for item in items:
        needs = {need for need in SLOW_NEEDS if item.get_closest_marker(need) is not None}
        fixtures = set(getattr(item, "fixturenames", ()))
        for need, names in _NEEDS_FIXTURES.items():
            if fixtures & names:
                needs.add(need)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and any(
            isinstance(v, str) and v.startswith("postgres") for v in callspec.params.values()
        ):
            needs.add("postgres")
        if isinstance(item, pytest.Function):
            needs |= _needs_of(item.function, seen)
            if item.cls is not None:
                needs |= _needs_of(item.cls, seen)
            info = getattr(item, "_fixtureinfo", None)
            for defs in getattr(info, "name2fixturedefs", {}).values():
                for fixturedef in defs:
                    if _in_tests(fixturedef.func):
                        needs |= _needs_of(fixturedef.func, seen)
        for need in sorted(needs - {m.name for m in item.iter_markers()}):
            item.add_marker(need)
        if needs and item.get_closest_marker("slow") is None:
            item.add_marker("slow")


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model (onnxruntime int8), the default, shared by every test."""
    return default_embedder()


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> str:
    """A PostgreSQL server with pgvector: ``MEMVAULT_TEST_POSTGRES_URL``, else a private pgserver.

    The tests that use it fail (never skip) when no server can be had, so the PostgreSQL suite
    always runs. Tests isolate themselves in throwaway schemas (see ``tests/postgres_server.py``).
    """
    from postgres_server import postgres_server

    if os.environ.get("MEMVAULT_TEST_TIER") == "check":
        pytest.fail(
            "PostgreSQL was reached from the fast tier (MEMVAULT_TEST_TIER=check, `make "
            "check`): a test not recognised as a postgres one uses it; mark it "
            "@pytest.mark.postgres",
            pytrace=False,
        )
    server = postgres_server()
    problem = None
    try:
        url = server.__enter__()
    except RuntimeError as exc:
        problem = str(exc)
    if problem is not None:
        pytest.fail(f"PostgreSQL tests cannot run: {problem}", pytrace=False)
    request.addfinalizer(lambda: server.__exit__(None, None, None))
    return url


@pytest.fixture
def schemas(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """Fresh PostgreSQL schema names (dropped afterwards); starts the server on first use."""
    from postgres_server import SchemaFactory

    factory: SchemaFactory | None = None

    def new() -> str:
        nonlocal factory
        if factory is None:
            factory = SchemaFactory(request.getfixturevalue("postgres_url"))
        return factory()

    yield new
    if factory is not None:
        factory.drop_all()


@pytest.fixture
async def conversation_stores(
    request: pytest.FixtureRequest, tmp_path: Path, schemas: Callable[[], str]
) -> AsyncIterator[ConversationStoreFactory]:
    """Builds fresh, empty conversation stores: ``conversation_stores(kind, clock)``.

    ``kind`` is ``sqlite`` (a new file), ``memory`` (in process) or ``postgres`` (a new schema
    of the test server); every store built is closed after the test.
    """
    from memvault.conversation import InMemoryConversationStore
    from memvault.conversation.sqlite import SQLiteConversationStore

    built: list[SQLConversationStore] = []

    def make(kind: str, clock: Callable[[], datetime] | None) -> SQLConversationStore:
        store: SQLConversationStore
        if kind == "sqlite":
            store = SQLiteConversationStore(tmp_path / f"conv{len(built)}.db", clock=clock)
        elif kind == "memory":
            store = InMemoryConversationStore(clock=clock)
        elif kind == "postgres":
            from memvault.conversation.postgres import PostgresConversationStore

            url = request.getfixturevalue("postgres_url")
            store = PostgresConversationStore(url, schema=schemas(), clock=clock)
        else:
            msg = f"unknown conversation store kind {kind!r}"
            raise ValueError(msg)
        built.append(store)
        return store

    yield make
    for store in built:
        await store.close()


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No MEMVAULT_* setting and no ./memvault.yaml of the machine leaks into a test: the
    variables are removed (but the model cache's) and the test runs in ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """numpy's OpenBLAS set to two threads for the test (restored after), as a machine's
    default would be; skipped where numpy does not use OpenBLAS."""
    api = _blas._api()
    if api is None:
        pytest.skip("numpy is not using OpenBLAS here")
    setter, getter = api
    before = getter()
    setter(2)
    try:
        yield
    finally:
        setter(before)

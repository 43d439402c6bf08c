"""API keys (memvault.server.keys) on a real SQLite file and in process.

PostgreSQL runs the same round trip in tests/integration/test_keys_postgres.py.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from memvault.embeddings import HashingEmbedder
from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryRetrievalError,
    MemoryValidationError,
)
from memvault.memory import Memory
from memvault.server.keys import (
    ApiKey,
    InMemoryKeyStore,
    KeyStore,
    PostgresKeyStore,
    Scope,
    SQLiteKeyStore,
    open_key_store,
)

SECRET_RE = re.compile(r"mvk_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class StepClock:
    """A clock that advances one second per call (or goes backwards when told to)."""

    def __init__(self, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = T0
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


MakeStore = Callable[..., KeyStore]


@pytest.fixture(params=["sqlite", "memory"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """A builder of fresh, empty key stores of one kind (closed after the test)."""
    built: list[KeyStore] = []

    def make(
        clock: Callable[[], datetime] | None = None, key_ids: Callable[[], str] | None = None
    ) -> KeyStore:
        store: KeyStore
        if request.param == "sqlite":
            path = tmp_path / f"store{len(built)}.db"
            store = SQLiteKeyStore(path, clock=clock, key_ids=key_ids)
        else:
            store = InMemoryKeyStore(clock=clock, key_ids=key_ids)
        built.append(store)
        return store

    yield make
    for store in built:
        store.close()


@pytest.fixture
def store(make_store: MakeStore) -> KeyStore:
    """A fresh, empty key store with a stepping clock."""
    return make_store(StepClock())


def _columns(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT * FROM api_keys").fetchall()


# -- round trip -----------------------------------------------------------------------------------


def test_a_created_key_authenticates_with_its_secret(store: KeyStore) -> None:
    key, secret = store.create(name="ci bot", tenant="acme", scopes=["read"], agent_id="dev-1")
    match = SECRET_RE.fullmatch(secret)
    assert match is not None and "k_" + match.group(1) == key.id
    assert re.fullmatch(r"k_[0-9a-f]{12}", key.id)
    assert (key.name, key.tenant, key.scopes, key.agent_id) == (
        "ci bot",
        "acme",
        frozenset({Scope.READ}),
        "dev-1",
    )
    assert key.created_at.tzinfo is UTC and not key.revoked
    assert store.authenticate(secret) == key
    assert store.get(key.id) == key
    assert store.list() == [key]


def test_defaults_are_the_default_tenant_read_and_write_and_no_agent(store: KeyStore) -> None:
    key, _ = store.create(name="k")
    assert key.tenant == "default"
    assert key.scopes == frozenset({Scope.READ, Scope.WRITE})
    assert key.agent_id is None


def test_every_key_gets_its_own_id_and_secret(store: KeyStore) -> None:
    made = [store.create(name=f"k{i}") for i in range(20)]
    assert len({k.id for k, _ in made}) == 20
    assert len({s for _, s in made}) == 20
    for key, secret in made:
        assert store.authenticate(secret) == key


def test_inputs_are_cleaned(store: KeyStore) -> None:
    key, _ = store.create(
        name="  deploy  ", tenant=" acme ", scopes=[" Admin", Scope.READ], agent_id=" dev-1 "
    )
    assert (key.name, key.tenant, key.agent_id) == ("deploy", "acme", "dev-1")
    assert key.scopes == frozenset({Scope.ADMIN, Scope.READ})


def test_a_single_scope_string_is_one_scope_not_its_letters(store: KeyStore) -> None:
    assert store.create(name="a", scopes="write")[0].scopes == frozenset({Scope.WRITE})
    assert store.create(name="b", scopes=Scope.ADMIN)[0].scopes == frozenset({Scope.ADMIN})


def test_keys_survive_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "memvault.db"
    first = SQLiteKeyStore(path)
    key, secret = first.create(name="ci", tenant="acme")
    first.close()
    second = SQLiteKeyStore(path)
    try:
        assert second.authenticate(secret) == key
        assert second.list(tenant="acme") == [key]
    finally:
        second.close()


def test_two_stores_on_one_file_see_each_others_keys(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    a, b = SQLiteKeyStore(path), SQLiteKeyStore(path)
    try:
        key, secret = a.create(name="from a")
        assert b.authenticate(secret) == key
        assert b.revoke(key.id)
        assert a.authenticate(secret) is None
    finally:
        a.close()
        b.close()


def test_concurrent_creation_from_threads(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    stores = [SQLiteKeyStore(path), SQLiteKeyStore(path)]
    made: list[tuple[ApiKey, str]] = []
    lock = threading.Lock()

    def work(store: KeyStore, n: int) -> None:
        for i in range(10):
            pair = store.create(name=f"t{n}-{i}")
            with lock:
                made.append(pair)

    threads = [threading.Thread(target=work, args=(stores[n % 2], n)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(made) == 40
        assert len(stores[0].list()) == 40
        assert all(stores[1].authenticate(secret) == key for key, secret in made)
    finally:
        for s in stores:
            s.close()


def test_an_id_collision_is_retried(make_store: MakeStore) -> None:
    ids = iter(["k_0000000000aa", "k_0000000000aa", "k_00000000beef"])
    store = make_store(StepClock(), key_ids=lambda: next(ids))
    first, _ = store.create(name="first")
    assert first.id == "k_0000000000aa"
    second, secret = store.create(name="second")  # the first id it is given is taken
    assert second.id == "k_00000000beef"
    assert store.authenticate(secret) == second
    assert [k.name for k in store.list()] == ["first", "second"]


# -- bad secrets ----------------------------------------------------------------------------------


def _bad_secrets(secret: str) -> list[object]:
    key_hex, token = secret[4:16], secret[17:]
    flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
    return [
        "",
        " ",
        "mvk_",
        "mvk__",
        secret[:-1],
        secret + "x",
        secret + "\n",
        " " + secret,
        secret.upper(),
        f"mvk_{key_hex}_{flipped}",  # right id, wrong secret
        f"mvk_000000000000_{token}",  # right token, unknown id
        f"mvk_{key_hex}_{'é' * 43}",  # non-ASCII, right length
        f"mvk_{key_hex}_{token[:-1]}€",
        "mvk_" + "٣" * 12 + "_" + token,  # Unicode digits
        "🔑" * 60,
        "Bearer " + secret,
        secret.replace("mvk_", "mvx_"),
        "mvk_" + key_hex + "_" + "x" * 10_000,
        "\x00" * 60,
        None,
        b"bytes",
        42,
        ["list"],
    ]


def test_wrong_malformed_empty_and_unicode_secrets_are_none(store: KeyStore) -> None:
    key, secret = store.create(name="ci")
    for bad in _bad_secrets(secret):
        assert store.authenticate(bad) is None, bad  # type: ignore[arg-type]
    assert store.authenticate(secret) == key


def test_a_secret_of_another_store_is_unknown(make_store: MakeStore) -> None:
    a, b = make_store(), make_store()
    _, secret = a.create(name="a")
    assert b.authenticate(secret) is None


# -- revocation -----------------------------------------------------------------------------------


def test_a_revoked_key_no_longer_authenticates_but_stays_listed(store: KeyStore) -> None:
    key, secret = store.create(name="ci")
    other, other_secret = store.create(name="other")
    assert store.revoke(key.id) is True
    assert store.authenticate(secret) is None
    assert store.authenticate(other_secret) == other
    assert store.list() == [other]
    listed = store.list(include_revoked=True)
    assert [k.id for k in listed] == [key.id, other.id]
    assert listed[0].revoked and listed[0].revoked_at is not None
    assert listed[0].revoked_at > key.created_at
    got = store.get(key.id)
    assert got is not None and got.revoked


def test_revoking_twice_or_an_unknown_key_is_false(store: KeyStore) -> None:
    key, _ = store.create(name="ci")
    assert store.revoke(key.id) is True
    first = store.get(key.id)
    assert store.revoke(key.id) is False
    assert store.get(key.id) == first  # the first revocation time is kept
    assert store.revoke("k_000000000000") is False
    assert store.get("k_000000000000") is None


@pytest.mark.parametrize("bad", ["", "k_", "k_123", "K_0123456789ab", "k_0123456789AB", "x" * 14])
def test_malformed_key_ids_are_validation_errors(store: KeyStore, bad: str) -> None:
    with pytest.raises(MemoryValidationError, match="malformed key id"):
        store.get(bad)
    with pytest.raises(MemoryValidationError, match="malformed key id"):
        store.revoke(bad)


# -- storage --------------------------------------------------------------------------------------


def test_only_the_hash_of_the_secret_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    store = SQLiteKeyStore(path)
    key, secret = store.create(name="ci", tenant="acme", scopes=["admin"], agent_id="dev-1")
    store.revoke(key.id)
    store.close()
    token = secret[17:]
    (row,) = _columns(path)
    for value in row:
        assert secret not in str(value)
        assert token[:16] not in str(value)
    with sqlite3.connect(path) as conn:
        (stored,) = conn.execute("SELECT secret_hash FROM api_keys").fetchone()
    assert stored == hashlib.sha256(secret.encode()).hexdigest()
    # Nothing else in the file holds it either (WAL checkpointed by the close).
    assert secret.encode() not in path.read_bytes()
    assert token.encode() not in path.read_bytes()


def test_the_key_model_holds_no_secret(store: KeyStore) -> None:
    key, secret = store.create(name="ci")
    dumped = key.model_dump_json()
    assert secret not in dumped and secret[17:] not in dumped
    assert set(ApiKey.model_fields) == {
        "id",
        "name",
        "tenant",
        "scopes",
        "agent_id",
        "created_at",
        "revoked_at",
    }


def test_an_unreadable_stored_row_is_a_retrieval_error(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    store = SQLiteKeyStore(path)
    key, secret = store.create(name="ci")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE api_keys SET scopes = 'read,superuser'")
    with pytest.raises(MemoryRetrievalError, match="unreadable"):
        store.list()
    with pytest.raises(MemoryRetrievalError, match="unreadable"):
        store.authenticate(secret)
    store.close()
    assert key.id in str(_columns(path))


def test_a_closed_store_refuses_calls(store: KeyStore) -> None:
    store.create(name="ci")
    store.close()
    with pytest.raises(MemoryConnectionError, match="closed"):
        store.list()
    with pytest.raises(MemoryConnectionError, match="closed"):
        store.create(name="again")


def test_every_store_is_a_key_store(tmp_path: Path) -> None:
    assert isinstance(InMemoryKeyStore(), KeyStore)
    assert isinstance(SQLiteKeyStore(tmp_path / "x.db"), KeyStore)
    assert isinstance(PostgresKeyStore("postgresql://u@localhost/db"), KeyStore)
    assert not (tmp_path / "x.db").exists()  # nothing is opened before the first call


# -- sharing the file with the memories ----------------------------------------------------------


def test_keys_first_then_the_memory_store_opens_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    store = SQLiteKeyStore(path)
    key, secret = store.create(name="ci")
    with Memory(str(path), embedder=HashingEmbedder(dimension=64)) as mem:
        mid = mem.add("Prefers Litestar over Flask", agent_id="dev-1")
        assert [e.id for e in mem.list(agent_id="dev-1")] == [mid]
        assert store.authenticate(secret) == key  # both open on one file
    store.close()
    with Memory(str(path), embedder=HashingEmbedder(dimension=64)) as mem:
        assert [e.content for e in mem.list(agent_id="dev-1")] == ["Prefers Litestar over Flask"]


def test_an_existing_memory_store_keeps_its_memories(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    with Memory(str(path), embedder=HashingEmbedder(dimension=64)) as mem:
        mid = mem.add("Deploys on Fridays are forbidden", agent_id="dev-1")
    store = SQLiteKeyStore(path)
    key, secret = store.create(name="ci")
    store.close()
    with Memory(str(path), embedder=HashingEmbedder(dimension=64)) as mem:
        entry = mem.get(mid, agent_id="dev-1")
        assert entry.content == "Deploys on Fridays are forbidden"
    reopened = SQLiteKeyStore(path)
    try:
        assert reopened.authenticate(secret) == key
    finally:
        reopened.close()


def test_another_applications_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    store = SQLiteKeyStore(path)
    with pytest.raises(MemoryConnectionError, match="another application"):
        store.create(name="ci")
    with pytest.raises(MemoryConnectionError, match="another application"):
        store.authenticate("mvk_000000000000_" + "a" * 43)
    store.close()
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"users"}


def test_a_file_that_is_not_sqlite_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes, not a database\n")
    store = SQLiteKeyStore(path)
    with pytest.raises(MemoryConnectionError, match="not a SQLite database"):
        store.list()
    store.close()
    assert path.read_text() == "my notes, not a database\n"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    store = SQLiteKeyStore(tmp_path)
    with pytest.raises(MemoryConnectionError, match="directory"):
        store.list()
    store.close()


# -- scopes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("held", "allowed"),
    [
        ({Scope.READ}, {Scope.READ}),
        ({Scope.WRITE}, {Scope.READ, Scope.WRITE}),
        ({Scope.ADMIN}, {Scope.READ, Scope.WRITE, Scope.ADMIN}),
        ({Scope.READ, Scope.WRITE}, {Scope.READ, Scope.WRITE}),
        ({Scope.READ, Scope.ADMIN}, {Scope.READ, Scope.WRITE, Scope.ADMIN}),
    ],
)
def test_admin_implies_write_implies_read(
    store: KeyStore, held: set[Scope], allowed: set[Scope]
) -> None:
    key, _ = store.create(name="k", scopes=held)
    assert {s for s in Scope if key.allows(s)} == allowed


def test_allows_takes_scope_names_and_refuses_unknown_ones(store: KeyStore) -> None:
    key, _ = store.create(name="k", scopes=["write"])
    assert key.allows("read")  # type: ignore[arg-type]
    assert not key.allows("admin")  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="unknown scope"):
        key.allows("root")  # type: ignore[arg-type]


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", "x" * 101, "tab\there", "new\nline", "nul\x00"])
def test_bad_names_are_refused(store: KeyStore, name: str) -> None:
    with pytest.raises(MemoryValidationError, match="invalid key name"):
        store.create(name=name)
    assert store.list(include_revoked=True) == []


@pytest.mark.parametrize("tenant", ["", "  ", "t" * 101, "a\x00b", "line\nbreak"])
def test_bad_tenants_are_refused(store: KeyStore, tenant: str) -> None:
    with pytest.raises(MemoryValidationError, match="invalid tenant"):
        store.create(name="k", tenant=tenant)
    with pytest.raises(MemoryValidationError, match="invalid tenant"):
        store.list(tenant=tenant)


def test_unknown_scopes_list_the_valid_ones(store: KeyStore) -> None:
    with pytest.raises(MemoryValidationError) as info:
        store.create(name="k", scopes=["read", "superuser"])
    assert "unknown scope 'superuser'" in str(info.value)
    assert "read, write, admin" in str(info.value)
    with pytest.raises(MemoryValidationError, match="unknown scope"):
        store.create(name="k", scopes=[1])  # type: ignore[list-item]


def test_no_scope_at_all_is_refused(store: KeyStore) -> None:
    with pytest.raises(MemoryValidationError, match="at least one scope"):
        store.create(name="k", scopes=[])
    with pytest.raises(MemoryValidationError, match="list of scopes"):
        store.create(name="k", scopes=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("agent", ["", "  ", "a" * 201, "bad\x07agent"])
def test_bad_agent_ids_are_refused(store: KeyStore, agent: str) -> None:
    with pytest.raises(MemoryValidationError, match="agent_id"):
        store.create(name="k", agent_id=agent)


def test_a_bad_input_leaves_a_fresh_file_uncreated(tmp_path: Path) -> None:
    path = tmp_path / "memvault.db"
    store = SQLiteKeyStore(path)
    with pytest.raises(MemoryValidationError):
        store.create(name="k", scopes=["nope"])
    store.close()
    assert not path.exists()


# -- listing --------------------------------------------------------------------------------------


def test_list_filters_by_tenant_oldest_first(store: KeyStore) -> None:
    a, _ = store.create(name="a", tenant="acme")
    b, _ = store.create(name="b", tenant="globex")
    c, _ = store.create(name="c", tenant="acme")
    d, _ = store.create(name="d", tenant="acme")
    store.revoke(c.id)
    assert store.list() == [a, b, d]
    assert store.list(tenant="acme") == [a, d]
    assert [k.id for k in store.list(tenant="acme", include_revoked=True)] == [a.id, c.id, d.id]
    assert store.list(tenant="globex") == [b]
    assert store.list(tenant="initech") == []


def test_creation_order_does_not_depend_on_the_clock(make_store: MakeStore) -> None:
    store = make_store(StepClock(step=-timedelta(minutes=1)))  # a clock running backwards
    names = ["first", "second", "third"]
    for name in names:
        store.create(name=name)
    assert [k.name for k in store.list()] == names


def test_the_clock_is_stored_as_utc(make_store: MakeStore) -> None:
    plus_two = timezone(timedelta(hours=2))
    store = make_store(lambda: datetime(2026, 3, 1, 11, 0, 0, 123456, tzinfo=plus_two))
    key, _ = store.create(name="k")
    assert key.created_at == datetime(2026, 3, 1, 9, 0, 0, 123456, tzinfo=UTC)
    assert key.created_at.tzinfo is UTC
    (listed,) = store.list()
    assert listed.created_at == key.created_at and listed.created_at.utcoffset() == timedelta(0)


# -- the model ------------------------------------------------------------------------------------


def _key(**changes: object) -> ApiKey:
    data: dict[str, object] = {
        "id": "k_0123456789ab",
        "name": "ci",
        "tenant": "default",
        "scopes": ["read"],
        "agent_id": None,
        "created_at": T0,
    }
    data.update(changes)
    return ApiKey.model_validate(data)


def test_the_model_is_frozen_and_validated() -> None:
    key = _key()
    with pytest.raises(ValidationError):
        key.name = "other"  # type: ignore[misc]
    cases: list[dict[str, object]] = [
        {"id": "k_xyz"},
        {"name": ""},
        {"tenant": " "},
        {"scopes": []},
        {"scopes": ["root"]},
        {"agent_id": ""},
        {"created_at": datetime(2026, 3, 1)},  # naive
        {"revoked_at": datetime(2026, 3, 1)},
        {"secret": "x"},
    ]
    for bad in cases:
        with pytest.raises(ValidationError):
            _key(**bad)


def test_the_json_form_lists_scopes_in_order() -> None:
    key = _key(scopes=["admin", "read", "write"])
    assert key.model_dump(mode="json")["scopes"] == ["read", "write", "admin"]
    assert ApiKey.model_validate_json(key.model_dump_json()) == key
    assert not key.revoked
    assert _key(revoked_at=T0).revoked


# -- the factory ----------------------------------------------------------------------------------


def test_open_key_store_follows_the_storage_url(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    plain = open_key_store(str(path))
    assert isinstance(plain, SQLiteKeyStore) and plain.location == str(path)
    url = open_key_store(f"sqlite:///{path}")
    assert isinstance(url, SQLiteKeyStore) and url.location == str(path)
    assert isinstance(open_key_store("memory://"), InMemoryKeyStore)
    pg = open_key_store("postgresql://agent:pw@db.example/mem?schema=tenant_a")
    assert isinstance(pg, PostgresKeyStore)
    assert pg.location == "postgresql://agent@db.example/mem?schema=tenant_a"
    assert not path.exists()


@pytest.mark.parametrize("url", ["http://localhost:8000", "https://memvault.example/api"])
def test_http_urls_are_refused(url: str) -> None:
    with pytest.raises(MemoryConfigError, match="server's own store"):
        open_key_store(url)


@pytest.mark.parametrize("url", ["composite://", "redis://localhost", ""])
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(MemoryConfigError):
        open_key_store(url)


def test_importing_the_keys_module_does_not_import_fastapi() -> None:
    import subprocess
    import sys

    code = (
        "import sys, memvault.server, memvault.server.keys;"
        "print('fastapi' in sys.modules, 'psycopg' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]

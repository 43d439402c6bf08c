"""A real memvault server for tests: uvicorn on a free loopback port, in a background thread
(:func:`live_server.run_app`, shared with the dashboard tests; re-exported here).

The server runs the real app over a real SQLite file with the real embedding model (shared with
the rest of the session through the ``minilm`` fixture); clients talk to it over real HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from live_server import run_app
from memvault.cli import _common
from memvault.config import load_config
from memvault.protocols import Embedder
from memvault.server.keys import KeyStore, open_key_store
from memvault.server.rest import ServerSettings, create_app
from memvault.server.state import open_server_state
from memvault.service import MemoryService

__all__ = ["STANDARD_KEYS", "LiveServer", "ServerFactory", "run_app"]


@dataclass
class LiveServer:
    """A running server: its base URL, its service, its key store and the keys made for tests."""

    url: str
    db: Path
    service: MemoryService
    keys: KeyStore | None
    secrets: dict[str, str] = field(default_factory=dict)

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.Client:
        """An HTTP client for the server, authenticated with the named test key."""
        headers = {} if key is None else {"Authorization": f"Bearer {self.secrets[key]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0, **kwargs)


ServerFactory = Callable[..., LiveServer]


@pytest.fixture
def live_server(tmp_path: Path, minilm: Embedder) -> Iterator[ServerFactory]:
    """Start servers: ``live_server(auth=True, settings=None, keys={name: kwargs})``.

    ``db`` puts a server on an existing store (several servers over one store: instances of
    one service); ``shared_state`` gives it the store's shared server state (dashboard
    sessions, shared rate limits), as ``memvault serve`` does.
    """
    stops: list[Callable[[], None]] = []

    def start(
        *,
        auth: bool = True,
        settings: ServerSettings | None = None,
        keys: dict[str, dict[str, Any]] | None = None,
        db: Path | None = None,
        shared_state: bool = False,
    ) -> LiveServer:
        path = db or tmp_path / f"server{len(stops)}.db"
        service = MemoryService(load_config(url=str(path)), embedder=minilm)
        store = open_key_store(str(path)) if auth else None
        secrets: dict[str, str] = {}
        if store is not None:
            for name, spec in (keys or {}).items():
                _, secrets[name] = store.create(name=name, **spec)
        state = open_server_state(str(path)) if shared_state else None
        app = create_app(service, keys=store, settings=settings, state=state)
        url, stop = run_app(app)
        stops.append(stop)
        return LiveServer(url=url, db=path, service=service, keys=store, secrets=secrets)

    yield start
    for stop in reversed(stops):
        stop()


#: The keys most server tests use.
STANDARD_KEYS: dict[str, dict[str, Any]] = {
    "admin": {"scopes": ["admin"]},
    "dev1": {"scopes": ["read", "write"], "agent_id": "dev-1"},
    "dev2": {"scopes": ["read", "write"], "agent_id": "dev-2"},
    "reader": {"scopes": ["read"]},
    "operator": {"scopes": ["read", "write"]},
    "acme": {"scopes": ["admin"], "tenant": "acme"},
    "acme-dev1": {"scopes": ["read", "write"], "agent_id": "dev-1", "tenant": "acme"},
}


@pytest.fixture
def server(live_server: ServerFactory) -> LiveServer:
    """A server with authentication on and the standard test keys."""
    return live_server(keys=STANDARD_KEYS)


@pytest.fixture
def cli_store(tmp_path: Path) -> Iterator[Path]:
    """The ``memvault`` CLI's store for this test (a SQLite file), closed and forgotten after."""
    path = tmp_path / "cli.db"
    _common.state.db = str(path)
    yield path
    _common.close_memory()
    _common.state.db = None

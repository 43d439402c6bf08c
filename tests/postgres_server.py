"""The PostgreSQL server the test suite runs against, and throwaway schemas on it.

``MEMVAULT_TEST_POSTGRES_URL`` names an existing server (it needs pgvector, or the right to
``CREATE EXTENSION vector``). Without it a private server is started with ``pgserver``, which
bundles PostgreSQL 16 and pgvector, in a temporary directory that is deleted afterwards. If
neither works the PostgreSQL tests fail with the reason: they are never skipped silently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ENV_URL = "MEMVAULT_TEST_POSTGRES_URL"

__all__ = ["ENV_URL", "SchemaFactory", "postgres_server"]


def _prepare(url: str) -> None:
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Yield the URL of a server with pgvector; a private one is stopped and deleted after.

    Raises:
        RuntimeError: no server could be reached or started (with the reason and the remedy).
    """
    external = os.environ.get(ENV_URL, "").strip()
    if external:
        try:
            _prepare(external)
        except psycopg.Error as exc:
            msg = f"{ENV_URL} is set but the server cannot be used: {exc}"
            raise RuntimeError(msg) from exc
        yield external
        return
    with _private_server() as url:
        yield url


@contextlib.contextmanager
def _private_server() -> Iterator[str]:
    try:
        with warnings.catch_warnings():
            # pgserver warns at import time when XDG_RUNTIME_DIR is unset (it falls back to /tmp).
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:
        msg = (
            f"the PostgreSQL tests need pgserver (pip install pgserver) or {ENV_URL} "
            "pointing at a server with pgvector"
        )
        raise RuntimeError(msg) from exc
    # pgserver chmods the path's parents so its service user can reach the data directory:
    # a directory of our own under the system temp dir keeps that away from pytest's tmp tree.
    root = Path(tempfile.mkdtemp(prefix="memvault-pg-"))
    server: Any = None
    try:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server = pgserver.get_server(root / "data", cleanup_mode="stop")
            url = str(server.get_uri())
            _prepare(url)
            with psycopg.connect(url, autocommit=True) as conn:
                # A throwaway server: durability buys nothing and costs the suite seconds.
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(
                        sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting))
                    )
                conn.execute("SELECT pg_reload_conf()")
        except Exception as exc:
            log = root / "data" / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
            msg = f"could not start a private PostgreSQL server with pgserver: {exc}\n{tail}"
            raise RuntimeError(msg) from exc
        yield url
    finally:
        if server is not None:
            with contextlib.suppress(Exception):
                server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


class SchemaFactory:
    """Hands out fresh schema names (``t_<hex>``) and drops every one of them at the end."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.names: list[str] = []

    def __call__(self) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.names.append(name)
        return name

    def drop_all(self) -> None:
        """Drop every schema handed out (those never created are ignored)."""
        if not self.names:
            return
        with psycopg.connect(self.url, autocommit=True) as conn:
            for name in self.names:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )
        self.names.clear()


class Replica:
    """A private primary (pgserver) and a streaming standby made from it with pg_basebackup.

    ``stop()`` kills the standby (``-m immediate``, as a crash) and ``start()`` brings it back;
    ``pause()``/``resume()`` hold and release WAL replay, so a test can tell a read served by
    the standby (which does not see a write yet) from one served by the primary.
    """

    def __init__(self, root: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
            from pgserver import _commands

        self._commands: Any = _commands
        self.server: Any = pgserver.get_server(root / "primary", cleanup_mode="stop")
        self.primary_url = str(self.server.get_uri())
        info = self.server.get_postmaster_info()
        user = self.server.system_user
        self._kw: dict[str, Any] = {"user": user} if user else {}
        self.standby = root / "standby"
        self.standby.mkdir(mode=0o700)
        sockets = root / "standby-socket"
        sockets.mkdir()
        sockets.chmod(0o777)
        if user:
            import pwd

            entry = pwd.getpwnam(user)
            os.chown(self.standby, entry.pw_uid, entry.pw_gid)
        self._commands.pg_basebackup(
            ["-h", str(info.socket_dir), "-p", str(info.port), "-U", "postgres",
             "-D", str(self.standby), "-R", "-X", "stream"],
            timeout=120, **self._kw,
        )  # fmt: skip
        self._start_args = ["-w", "-o", '-h ""', "-o", f"-k {sockets}", "-l",
                            str(self.standby / "log"), "start"]  # fmt: skip
        self.replica_url = f"postgresql://postgres:@/postgres?host={sockets}&port={info.port}"
        _prepare(self.primary_url)
        self.start()

    def start(self) -> None:
        """Start the standby (it catches up from the primary)."""
        self._commands.pg_ctl(self._start_args, pgdata=self.standby, timeout=60, **self._kw)

    def stop(self) -> None:
        """Kill the standby outright."""
        self._commands.pg_ctl(
            ["-w", "-m", "immediate", "stop"], pgdata=self.standby, timeout=60, **self._kw
        )

    def _on_standby(self, statement: str) -> None:
        with psycopg.connect(self.replica_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)

    def pause(self) -> None:
        """Hold WAL replay on the standby."""
        self._on_standby("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        """Let the standby replay again."""
        self._on_standby("SELECT pg_wal_replay_resume()")

    def close(self) -> None:
        """Stop both servers."""
        with contextlib.suppress(Exception):
            self.stop()
        with contextlib.suppress(Exception):
            self.server.cleanup()


@contextlib.contextmanager
def primary_with_replica() -> Iterator[Replica]:
    """A private primary and its streaming standby, both deleted afterwards."""
    root = Path(tempfile.mkdtemp(prefix="memvault-replica-"))
    try:
        replica = Replica(root)
        try:
            yield replica
        finally:
            replica.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

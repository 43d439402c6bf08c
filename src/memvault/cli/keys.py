"""``memvault keys create|list|revoke``: the API keys the memvault server accepts.

Keys live in the store ``--db`` (or the configuration) names, next to the memories: the
``api_keys`` table of the SQLite file (the default tenant's file holds the keys of every tenant)
or of the PostgreSQL schema. The commands open only that table, never the memory store, so they
do not load the embedding model. Listing or revoking in a SQLite store that does not exist yet
finds no keys instead of creating the file.

A key's secret is printed once, by ``create``, as the only line on stdout (what the key is and
the copy-it-now warning go to stderr), so ``KEY=$(memvault keys create ...)`` captures exactly
the secret. The store keeps only its hash, so it cannot be shown again. ``list`` never prints
secrets or hashes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from memvault.cli._common import emit_json, err_console, load_cli_config, out, state
from memvault.config import COMPOSITE_URL
from memvault.errors import MemoryValidationError
from memvault.server.keys import ApiKey, InMemoryKeyStore, KeyStore, SQLiteKeyStore, open_key_store

__all__ = ["keys_app", "register"]

T = TypeVar("T")

keys_app = typer.Typer(
    name="keys",
    help="API keys of the memvault server: create, list, revoke.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _store_url() -> str:
    """The storage URL the memory commands would use (``--db``, environment, config file)."""
    cfg = load_cli_config()
    url = state.db or cfg.resolved_url()
    # Keys are not routed by category: they live in the composite store's default child.
    return cfg.composite_default_url() if url.strip() == COMPOSITE_URL else url


def _with_store(fn: Callable[[KeyStore], T], *, create: bool = False) -> T:
    """Run ``fn`` on the key store; on an empty one if the SQLite file does not exist yet."""
    store: KeyStore = open_key_store(_store_url())
    if not create and isinstance(store, SQLiteKeyStore) and not Path(store.location).exists():
        # Same answers (and the same input checks) as an empty store, without creating a file.
        store = InMemoryKeyStore()
    try:
        return fn(store)
    finally:
        store.close()


def _scopes(key: ApiKey) -> list[str]:
    data: list[str] = key.model_dump(mode="json", include={"scopes"})["scopes"]
    return data


def _key_json(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "tenant": key.tenant,
        "scopes": _scopes(key),
        "agent_id": key.agent_id,
        "created_at": key.created_at.isoformat(),
        "revoked_at": None if key.revoked_at is None else key.revoked_at.isoformat(),
    }


@keys_app.command()
def create(
    name: Annotated[
        str, typer.Option("--name", "-n", help="A label for the key: who or what will use it.")
    ],
    tenant: Annotated[
        str,
        typer.Option("--tenant", "-t", help="The tenant (company) whose memories the key reaches."),
    ] = "default",
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            "-s",
            metavar="SCOPE",
            help="read, write or admin; repeat for several (default: read and write). "
            "admin implies write, write implies read.",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", "-a", help="Pin the key to this agent id: it acts as it only."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the key and its secret as JSON.")
    ] = False,
) -> None:
    """Create an API key and print its secret (shown this once only)."""
    options: dict[str, Any] = {"name": name, "tenant": tenant, "agent_id": agent}
    if scope:
        options["scopes"] = scope
    key, secret = _with_store(lambda s: s.create(**options), create=True)
    if json_out:
        data = _key_json(key)
        del data["revoked_at"]
        data["secret"] = secret
        emit_json(data)
        return
    pinned = "" if key.agent_id is None else f", agent {key.agent_id!r}"
    err_console.print(
        f"created key {key.id} {key.name!r} (tenant {key.tenant!r}, "
        f"scopes {','.join(_scopes(key))}{pinned})",
        markup=False,
    )
    # The secret alone on stdout: KEY=$(memvault keys create ...) captures just it.
    sys.stdout.write(secret + "\n")
    sys.stdout.flush()
    err_console.print(
        "warning: copy the secret now: it cannot be shown again (only its hash is stored)",
        markup=False,
    )


@keys_app.command("list")
def list_(
    tenant: Annotated[
        str | None, typer.Option("--tenant", "-t", help="Only the keys of this tenant.")
    ] = None,
    include_revoked: Annotated[bool, typer.Option("--all", help="Include revoked keys.")] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of a table.")
    ] = False,
) -> None:
    """List API keys, oldest first (never their secrets)."""
    keys = _with_store(lambda s: s.list(tenant=tenant, include_revoked=include_revoked))
    if json_out:
        emit_json([_key_json(k) for k in keys])
        return
    if not keys:
        out.print("no keys")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("id", no_wrap=True)
    table.add_column("name", overflow="fold")
    table.add_column("tenant", overflow="fold")
    table.add_column("scopes", no_wrap=True)
    table.add_column("agent", overflow="fold")
    table.add_column("created", no_wrap=True)
    table.add_column("revoked", no_wrap=True)
    for k in keys:
        table.add_row(
            k.id,
            escape(k.name),
            escape(k.tenant),
            ",".join(_scopes(k)),
            "-" if k.agent_id is None else escape(k.agent_id),
            f"{k.created_at:%Y-%m-%d}",
            "-" if k.revoked_at is None else f"{k.revoked_at:%Y-%m-%d}",
        )
    out.print(table)


@keys_app.command()
def revoke(
    key_id: Annotated[
        str | None,
        typer.Argument(help="The key's id (k_ and 12 hex digits, see 'keys list')."),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", "-n", help="Instead of an id: the one active key with this name."),
    ] = None,
) -> None:
    """Revoke an API key: it stops working at once (it stays listed with --all)."""
    if (key_id is None) == (name is None):
        msg = "give the key's id or --name NAME (one of them)"
        raise MemoryValidationError(msg)

    def run(store: KeyStore) -> tuple[ApiKey | None, bool]:
        target = key_id if name is None else _active_key_named(store, name)
        if target is None:
            return None, False
        key = store.get(target)
        return key, key is not None and store.revoke(target)

    key, revoked = _with_store(run)
    if key is None:
        what = f"key {key_id}" if name is None else f"active key named {name!r}"
        err_console.print(f"error: no {what}", markup=False)
        raise typer.Exit(1)
    if not revoked:
        err_console.print(f"error: key {key_id} is already revoked", markup=False)
        raise typer.Exit(1)
    out.print(f"revoked key {key.id} {key.name!r} (tenant {key.tenant!r})", markup=False)


def _active_key_named(store: KeyStore, name: str) -> str | None:
    """The id of the one active key called ``name``; None if there is none.

    Raises:
        MemoryValidationError: several active keys have that name (their ids are listed).
    """
    ids = [k.id for k in store.list() if k.name == name]
    if len(ids) > 1:
        msg = f"{len(ids)} active keys are named {name!r} ({', '.join(ids)}): revoke one by id"
        raise MemoryValidationError(msg)
    return ids[0] if ids else None


def register(app: typer.Typer) -> None:
    """Attach ``memvault keys ...`` to ``app``."""
    app.add_typer(keys_app, name="keys")

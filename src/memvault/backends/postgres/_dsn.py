"""Storage URLs of the PostgreSQL backend.

A memvault URL is a libpq URL (``postgresql://user:secret@host:5432/db?sslmode=require``) that
may also name the schema to use (``&schema=tenant_a``, read by memvault, never sent to libpq).
Key/value connection strings (``host=... dbname=...``) work too. What users see (``location``,
error messages) never contains the password.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memvault.errors import MemoryConfigError

__all__ = ["SCHEMA_LOCK", "ParsedDsn", "check_schema", "parse_dsn", "scrub"]

SCHEMA_LOCK = int.from_bytes(
    hashlib.sha256(b"memvault:postgres:schema").digest()[:8], "big", signed=True
)
"""The advisory lock every creator of a memvault schema holds (transaction-scoped) around its
``CREATE SCHEMA``: the store's migrations, the side tables, the key store and the conversation
store each serialise their own DDL under their own lock, but they share the schema, and two of
them creating it at once (a server starting: the first request and the maintenance scheduler)
race on ``pg_namespace``'s unique index even with ``IF NOT EXISTS``. Always taken after the
creator's own lock, so the locks cannot deadlock."""

_SCHEMES = ("postgresql+psycopg://", "postgresql://", "postgres://")
# PostgreSQL truncates identifiers to 63 bytes; refuse instead of silently using another name.
_MAX_IDENTIFIER_BYTES = 63
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class ParsedDsn:
    """A storage URL split into what libpq gets and what users may see."""

    conninfo: str
    """The connection string for libpq (password included, ``schema`` removed)."""
    location: str
    """The URL without password (``schema`` kept), for ``location`` and messages."""
    schema: str | None
    """The schema named in the URL, if any."""
    secrets: tuple[str, ...]
    """Strings to scrub from any message (the password, raw and decoded)."""


def check_schema(name: str) -> str:
    """``name`` if it can name a schema, else :class:`MemoryConfigError`.

    Names are always quoted (``psycopg.sql.Identifier``), so any printable text works; what is
    refused is what PostgreSQL would truncate or reserve.
    """
    if not isinstance(name, str) or not name or _CONTROL.search(name):
        msg = f"invalid PostgreSQL schema name {name!r}: use 1-63 printable characters"
        raise MemoryConfigError(msg)
    if len(name.encode()) > _MAX_IDENTIFIER_BYTES:
        msg = f"PostgreSQL schema name {name!r} is longer than 63 bytes"
        raise MemoryConfigError(msg)
    if name.lower().startswith("pg_"):
        msg = f"PostgreSQL schema name {name!r} is reserved (names starting with pg_ are)"
        raise MemoryConfigError(msg)
    return name


def parse_dsn(url: str) -> ParsedDsn:
    """Split ``url`` (a ``postgresql://`` URL or a key/value string) for memvault.

    Raises:
        MemoryConfigError: libpq cannot parse it (the message omits the password).
    """
    text = url.strip()
    if not text.startswith(_SCHEMES):
        return _parse_keywords(text)  # parsed (so checked) by libpq already
    parsed = _parse_url(text)
    try:
        conninfo_to_dict(parsed.conninfo)
    except psycopg.Error as exc:
        message = scrub(str(exc), parsed.secrets)
        msg = f"invalid PostgreSQL URL {parsed.location!r}: {message}"
        raise MemoryConfigError(msg) from None
    return parsed


def _parse_url(text: str) -> ParsedDsn:
    rest = text.split("://", 1)[1]
    parts = urlsplit("postgresql://" + rest)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    user, colon, raw_password = userinfo.partition(":")
    secrets = [raw_password, unquote(raw_password)] if colon and raw_password else []
    schema: str | None = None
    kept: list[str] = []
    shown: list[str] = []
    # The query is edited piece by piece, not re-encoded: libpq's URL decoding differs from
    # urllib's (``+`` stays a plus sign), so a decode/encode round trip could change values.
    for piece in parts.query.split("&") if parts.query else []:
        key, _, value = piece.partition("=")
        name = unquote(key)
        if name == "schema":
            if schema is not None:
                msg = "the PostgreSQL URL names the schema twice"
                raise MemoryConfigError(msg)
            schema = unquote(value)
            continue
        kept.append(piece)
        if name == "password":
            secrets.extend([value, unquote(value)])
            continue
        shown.append(piece)
    netloc = f"{userinfo}{at}{hosts}"
    conninfo = urlunsplit(("postgresql", netloc, parts.path, "&".join(kept), ""))
    public_netloc = f"{user}@{hosts}" if user else hosts
    if schema is not None:
        shown.append(f"schema={schema}")
    location = urlunsplit(("postgresql", public_netloc, parts.path, "&".join(shown), ""))
    return ParsedDsn(conninfo, location, schema, tuple(s for s in secrets if s))


def _parse_keywords(text: str) -> ParsedDsn:
    try:
        params = conninfo_to_dict(text)
    except psycopg.Error:
        # Nothing can be shown safely: the string may hold a password libpq could not parse.
        msg = "invalid PostgreSQL connection string (not a postgresql:// URL or key=value list)"
        raise MemoryConfigError(msg) from None
    password = params.pop("password", None)
    secrets = (str(password),) if password else ()
    shown = make_conninfo("", **{k: v for k, v in params.items() if v is not None})
    return ParsedDsn(text, shown, None, secrets)


def scrub(message: str, secrets: tuple[str, ...]) -> str:
    """``message`` with every secret replaced by ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, "***")
    return message

"""Dashboard sessions: the API key kept server-side behind an opaque cookie, and CSRF tokens.

The browser only ever holds a random session id (cookie ``memvault_ui``: HttpOnly,
SameSite=Strict, Path=/ui, Secure over HTTPS). The API key the user typed lives in this
process's memory next to that id and is authenticated again on every request through the REST
server's own :class:`~memvault.server.rest.auth.Authenticator`, so a revoked key stops working
in the dashboard as soon as it stops working over REST. Every session carries a CSRF token that
every form (hidden ``csrf`` field) and every htmx request (``X-CSRF-Token`` header) must echo.

Sessions are per process: with ``memvault serve --workers N`` a login is known only to the
worker that accepted it (see the module's README lines in the final report).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

__all__ = [
    "COOKIE_NAME",
    "IDLE_SECONDS",
    "MAX_SESSIONS",
    "UiSession",
    "UiSessionStore",
]

COOKIE_NAME = "memvault_ui"
#: A session unused for this long is forgotten (the user logs in again).
IDLE_SECONDS = 8 * 3600.0
#: Sessions kept at most; the least recently used go first (bounds memory under login floods).
MAX_SESSIONS = 10_000


@dataclass(slots=True)
class UiSession:
    """One browser's session: its CSRF token and, once logged in, the API key it acts with."""

    id: str
    csrf: str
    secret: str | None = None
    """The API key's secret (None before login, and without authentication: ``--no-auth``)."""
    logged_in: bool = False
    last_seen: float = field(default_factory=time.monotonic)

    def csrf_ok(self, token: str | None) -> bool:
        """True if ``token`` is this session's CSRF token (constant-time comparison)."""
        if not token:
            return False
        return hmac.compare_digest(token.encode("utf-8", "replace"), self.csrf.encode("ascii"))


class UiSessionStore:
    """Sessions by id, in memory, with an idle timeout; thread-safe."""

    def __init__(self, *, idle_seconds: float = IDLE_SECONDS, limit: int = MAX_SESSIONS) -> None:
        self._idle = idle_seconds
        self._limit = limit
        self._sessions: dict[str, UiSession] = {}
        self._lock = threading.Lock()

    def new(self) -> UiSession:
        """A fresh anonymous session (new id, new CSRF token)."""
        session = UiSession(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32))
        with self._lock:
            if len(self._sessions) >= self._limit:
                oldest = min(self._sessions.values(), key=lambda s: s.last_seen)
                del self._sessions[oldest.id]
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> UiSession | None:
        """The live session with this id (its idle clock restarts), or None."""
        if not session_id:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.last_seen > self._idle:
                del self._sessions[session_id]
                return None
            session.last_seen = now
            return session

    def login(self, old: UiSession | None, secret: str | None) -> UiSession:
        """A new logged-in session replacing ``old`` (a new id: no session fixation)."""
        if old is not None:
            self.drop(old.id)
        session = self.new()
        session.secret = secret
        session.logged_in = True
        return session

    def drop(self, session_id: str) -> None:
        """Forget a session (logout)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

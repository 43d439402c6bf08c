"""Dashboard sessions: cookies, the login form's CSRF token, and where logged-in sessions live.

The browser only ever holds random ids. Before a login nothing is kept on the server: the
login form's CSRF token is a double-submit cookie (``memvault_ui_login``: HttpOnly,
SameSite=Strict, Path=/ui) whose value the form must echo, so anonymous requests (a flood of
``GET /ui/login``, a cross-site link) create no state and can log nobody out. A login creates a
session (cookie ``memvault_ui``) in the server's shared state
(:class:`~memvault.server.state.ServerState`: the database beside the API keys), holding the id
of the API key it acts with, never the secret; every page authenticates that key again through
the REST server's own :class:`~memvault.server.rest.auth.Authenticator`, so a revoked key stops
working in the dashboard as soon as it stops working over REST, and every server instance over
the same store knows every session. Every session carries a CSRF token that every form (hidden
``csrf`` field) and every htmx request (``X-CSRF-Token`` header) must echo.
"""

from __future__ import annotations

import hmac
import secrets

from memvault.server.state import IDLE_SECONDS, UiSession

__all__ = [
    "COOKIE_NAME",
    "IDLE_SECONDS",
    "LOGIN_COOKIE",
    "UiSession",
    "login_token",
    "login_token_ok",
]

COOKIE_NAME = "memvault_ui"
LOGIN_COOKIE = "memvault_ui_login"


def login_token() -> str:
    """A fresh login-form CSRF token (set as :data:`LOGIN_COOKIE` and echoed by the form)."""
    return secrets.token_urlsafe(32)


def login_token_ok(cookie: str | None, field: str | None) -> bool:
    """True if the form's token matches the login cookie (constant-time comparison)."""
    if not cookie or not field:
        return False
    return hmac.compare_digest(cookie.encode("utf-8", "replace"), field.encode("utf-8", "replace"))

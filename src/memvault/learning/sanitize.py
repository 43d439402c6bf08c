"""Error messages made safe to show a proposer LLM and to store: secrets out, length bounded."""

from __future__ import annotations

import re

__all__ = ["error_category", "sanitize_error"]

_MAX_CHARS = 1000
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Credentials in URLs, bearer tokens, key=value secrets, well-known key shapes.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/:@]+:[^\s/@]+@"), r"\1<redacted>@"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "Bearer <redacted>"),
    (
        re.compile(
            r"(?i)\b(api[_-]?key|token|secret|password|passwd|pwd|authorization)\s*[=:]\s*\S+"
        ),
        r"\1=<redacted>",
    ),
    (re.compile(r"\b(sk|mvk|ghp|xox[abp])[-_][A-Za-z0-9_-]{10,}"), "<redacted-key>"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "<redacted-key>"),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"), "<email>"),
    # Home directories name people.
    (re.compile(r"(/home/|/Users/)[^/\s]+"), r"\1<user>"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def sanitize_error(message: str) -> str:
    """``message`` without credentials, e-mail addresses or user names, at most 1000 chars.

    Tracebacks are cut to their last line (the exception itself), which is what a lesson needs.
    """
    text = _CONTROL.sub(" ", message).strip()
    if "Traceback (most recent call last)" in text:
        lines = [line for line in text.splitlines() if line.strip()]
        text = lines[-1].strip() if lines else ""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 1] + "…"


_EXC_RE = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Timeout|Refused))\b")
_WORD_RE = re.compile(r"[a-z][a-z0-9_]+")


def error_category(error: str | None, explicit: str | None = None) -> str | None:
    """A stable category for grouping failures across agents.

    The caller's ``explicit`` category wins; otherwise the exception class named in the error
    (``TimeoutError``), else its first two words (``rate limit``). None without an error.
    """
    if explicit is not None and explicit.strip():
        return explicit.strip().lower()[:100]
    if not error or not error.strip():
        return None
    found = _EXC_RE.search(error)
    if found:
        return found.group(1).lower()
    words = _WORD_RE.findall(error.lower())
    return "_".join(words[:2]) or None

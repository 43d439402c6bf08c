"""The web dashboard of ``memvault serve`` at ``/ui``: server-rendered pages over the service.

:func:`mount_ui` adds it to the REST app (:func:`memvault.server.rest.create_app` calls it), so
the dashboard runs in the same process with the same API keys, scopes and tenants as REST.
Pages are Jinja2 templates with htmx (vendored, ``static/``) for progressive enhancement and
server-rendered SVG charts (:mod:`memvault.server.ui.plots`); nothing is fetched from the
internet and there is no build step.

Modules: :mod:`~memvault.server.ui.app` (routes), :mod:`~memvault.server.ui.sessions` (the
session cookie and CSRF tokens), :mod:`~memvault.server.ui.data` (what the charts compute),
:mod:`~memvault.server.ui.plots` (SVG charts).
"""

from __future__ import annotations

from memvault.server.ui.app import BENCH_REPORT_ENV, SECURITY_HEADERS, UI_PREFIX, mount_ui

__all__ = ["BENCH_REPORT_ENV", "SECURITY_HEADERS", "UI_PREFIX", "mount_ui"]

"""``memvault serve`` and ``memvault mcp`` without their optional extras installed.

A missing extra must not look like success: the command exits 2 with one line on stderr that
names the missing module and the ``pip install`` that brings it. The missing import is
simulated in process (``sys.modules[name] = None`` makes ``import name`` raise ImportError),
through :func:`memvault.cli.app.main`, the function behind the console script.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from memvault.cli._common import extra_requirements


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``import MODULE`` (and of its submodules) fail as if it were not installed."""
    for name in list(sys.modules):
        if any(name == m or name.startswith(m + ".") for m in modules):
            monkeypatch.delitem(sys.modules, name)
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)
    # Modules of memvault that imported them must be imported afresh.
    for name in ("memvault.server.mcp", "memvault.server.rest", "memvault.server.rest.app"):
        if name in sys.modules:
            monkeypatch.delitem(sys.modules, name)


def test_the_extras_requirements_come_from_the_package_metadata() -> None:
    server = extra_requirements("server")
    assert any(r.startswith("fastapi") for r in server)
    assert any(r.startswith("uvicorn") for r in server)
    assert any(r.startswith("mcp") for r in extra_requirements("mcp"))
    assert extra_requirements("no-such-extra") == []


@pytest.mark.parametrize("module", ["uvicorn", "fastapi"])
def test_serve_without_the_server_extra_exits_2_with_the_fix(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    _hide(monkeypatch, module)
    result = run("--db", str(tmp_path / "x.db"), "serve", "--no-auth", "--port", "1")
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith("error: memvault serve needs the 'server' extra")
    assert f"{module} is not installed" in line
    assert "pip install " in line and "'fastapi>=" in line and "'uvicorn>=" in line


def test_mcp_without_the_mcp_extra_exits_2_with_the_fix(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hide(monkeypatch, "mcp")
    result = run("--db", str(tmp_path / "x.db"), "mcp", "--agent", "dev-1")
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith("error: memvault mcp needs the 'mcp' extra (mcp is not installed)")
    assert "pip install 'mcp" in line  # the extra's requirement, as pyproject.toml pins it


def test_serve_without_mcp_says_that_mcp_over_http_is_off(
    run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append((app, kw)))
    _hide(monkeypatch, "mcp")
    result = run("--db", str(tmp_path / "x.db"), "serve", "--no-auth", "--port", "18765")
    assert result.code == 0, result.err
    assert len(served) == 1 and served[0][1]["port"] == 18765
    warnings = [line for line in result.err_lines if line.startswith("warning: ")]
    assert len(warnings) == 1
    assert "MCP at /mcp is off" in warnings[0] and "pip install 'mcp" in warnings[0]

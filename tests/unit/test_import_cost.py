"""What ``import memvault`` costs, counted in memvault modules (issue 42).

The public names of the package load on first use (PEP 562), and the front door loads its
feature modules (graph, learning, conversation, agent, injection, the remote client) only when
a method needs them. Module counts are deterministic, so the bounds are exact ceilings; wall
time is measured by ``benchmarks/bench_import.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_COUNT = """
import json, sys
{stmt}
mods = sorted(m for m in sys.modules if m == "memvault" or m.startswith("memvault."))
third = sorted({{m.split(".")[0] for m in sys.modules}} - set(sys.stdlib_module_names))
print(json.dumps({{"memvault": mods, "third": third}}))
"""


def _loaded(stmt: str) -> tuple[list[str], list[str]]:
    """The memvault modules and third-party top-level packages loaded by ``stmt``, fresh."""
    out = subprocess.run(
        [sys.executable, "-c", _COUNT.format(stmt=stmt)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    found = json.loads(out)
    return found["memvault"], found["third"]


# Heavy optional or app-level dependencies the library's front door must not load on import.
_HEAVY = (
    "httpx",
    "rich",
    "typer",
    "click",
    "fastapi",
    "starlette",
    "pydantic_settings",
    "onnxruntime",
    "tokenizers",
    "sqlite_vec",
    "psycopg",
    "yaml",
)


def test_import_memvault_loads_almost_nothing() -> None:
    mods, third = _loaded("import memvault")
    assert len(mods) <= 5, mods
    assert not set(third) & {*_HEAVY, "numpy", "pydantic"}, third


@pytest.mark.parametrize(
    ("stmt", "bound"),
    [
        ("from memvault import Memory, AsyncMemory", 65),
        ("from memvault import *", 65),
    ],
)
def test_front_door_loads_no_feature_module(stmt: str, bound: int) -> None:
    mods, third = _loaded(stmt)
    assert len(mods) <= bound, f"{len(mods)} memvault modules: {mods}"
    features = ("agent", "injection", "remote", "api", "service", "server", "cli", "backends")
    loaded = [m for m in mods if m.split(".")[1:2] and m.split(".")[1] in features]
    assert not loaded, loaded
    assert not set(third) & set(_HEAVY), third


def test_public_names_resolve() -> None:
    import memvault

    for name in memvault.__all__:
        assert getattr(memvault, name) is not None, name
    assert set(memvault.__all__) <= set(dir(memvault))
    with pytest.raises(AttributeError):
        _ = memvault.no_such_name  # type: ignore[attr-defined]


def test_a_submodule_is_an_attribute_after_a_bare_import() -> None:
    stmt = (
        "import memvault\n"
        "assert memvault.errors.MemvaultError is memvault.MemvaultError\n"
        "assert memvault.remote.RemoteAsyncMemory.__name__ == 'RemoteAsyncMemory'"
    )
    mods, _ = _loaded(stmt)
    assert {"memvault.errors", "memvault.remote"} <= set(mods)


def test_server_url_loads_the_remote_client() -> None:
    stmt = (
        "from memvault import AsyncMemory\n"
        "m = AsyncMemory('http://127.0.0.1:9', api_key='k')\n"
        "assert type(m).__name__ == 'RemoteAsyncMemory', type(m)"
    )
    mods, _ = _loaded(stmt)
    assert "memvault.remote" in mods

"""``memvault serve`` processes run numpy's OpenBLAS on one thread unless the user chose, and
freeze the survivors of full garbage collections (memvault.server.gc_pauses)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from memvault.backends.sqlite import _blas
from memvault.cli.serve import build_app
from memvault.server import gc_pauses


@pytest.fixture(autouse=True)
def _no_gc_hook_left_behind() -> Iterator[None]:
    # build_app installs a process-wide GC hook: this test process must not keep it.
    yield
    gc_pauses.uninstall()


@pytest.fixture
def no_blas_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _blas.BLAS_THREAD_ENV:
        monkeypatch.delenv(name, raising=False)


def test_a_server_process_runs_blas_on_one_thread(
    tmp_path: Path, two_blas_threads: None, no_blas_env: None
) -> None:
    gc_pauses.uninstall()
    build_app({"db": str(tmp_path / "serve.db"), "no_auth": True})
    assert _blas.blas_threads() == 1
    assert gc_pauses.installed()


@pytest.mark.parametrize("name", _blas.BLAS_THREAD_ENV)
def test_a_thread_count_the_user_set_is_kept(
    tmp_path: Path,
    two_blas_threads: None,
    no_blas_env: None,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    monkeypatch.setenv(name, "2")
    build_app({"db": str(tmp_path / "serve.db"), "no_auth": True})
    assert _blas.blas_threads() == 2


def test_limit_threads_holds_after_an_open_single_threaded_block(two_blas_threads: None) -> None:
    with _blas.single_threaded():
        assert _blas.limit_threads(3)
        assert _blas.blas_threads() == 1
    assert _blas.blas_threads() == 3  # the new count, not the one saved on entry


def test_limit_threads_refuses_zero() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        _blas.limit_threads(0)

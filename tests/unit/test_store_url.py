"""An empty store URL is a mistake, not a request for the default store."""

from __future__ import annotations

import pytest

from memvault import AsyncMemory, Memory
from memvault.cli.app import main
from memvault.errors import MemoryConfigError


@pytest.mark.parametrize("url", ["", "   "])
def test_an_empty_url_is_refused(url: str) -> None:
    with pytest.raises(MemoryConfigError, match="empty"):
        AsyncMemory(url)
    with pytest.raises(MemoryConfigError, match="empty"):
        Memory(url)


def test_the_cli_refuses_an_empty_db(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", "", "list", "--agent", "a"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "empty" in err and "\n" not in err

"""Fixtures of the fault tests: throwaway PostgreSQL schemas, and the campaign's summary file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from postgres_server import SchemaFactory


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    """Fresh PostgreSQL schema names, dropped at the end of the test."""
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


BUILD = Path(__file__).resolve().parents[2] / "build"


@pytest.fixture(scope="module", autouse=True)
def _record_outcomes(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a module that keeps ``OUTCOMES`` (fault -> what the user saw), merge them into
    ``build/outside_faults.json`` for the closing report."""
    yield
    outcomes = getattr(request.module, "OUTCOMES", None)
    if outcomes:
        BUILD.mkdir(exist_ok=True)
        out = BUILD / "outside_faults.json"
        known = json.loads(out.read_text()) if out.exists() else {}
        known.update(outcomes)
        out.write_text(json.dumps(known, indent=2) + "\n")

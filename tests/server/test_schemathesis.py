"""Property-based fuzzing of the whole REST API from its own OpenAPI document (schemathesis).

Every documented operation gets generated requests, sent over real HTTP to a real server with an
admin key (so authorisation does not hide the handlers); no request may produce a 5xx and every
response must carry the documented JSON error shape. The run is bounded (``max_examples``) to
keep the suite fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from memvault.config import load_config
from memvault.finetune.config import EmbeddingFineTuneConfig
from memvault.protocols import Embedder
from memvault.server.keys import open_key_store
from memvault.server.rest import create_app
from memvault.service import MemoryService

from .conftest import run_app

_STATE: dict[str, Any] = {}


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[str]:
    db: Path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    # Fine-tuning on, so its admin routes are fuzzed for real instead of answering 501.
    fine_tune = EmbeddingFineTuneConfig(
        enabled=True, checkpoint_path=str(db.parent / "registry"), base_model="minilm"
    )
    config = load_config(url=str(db)).model_copy(update={"fine_tune": fine_tune})
    service = MemoryService(config, embedder=minilm)
    keys = open_key_store(str(db))
    _, secret = keys.create(name="fuzz-admin", scopes=["admin"])
    url, stop = run_app(create_app(service, keys=keys))
    _STATE["auth"] = {"Authorization": f"Bearer {secret}"}
    yield url
    stop()


def test_no_operation_answers_with_a_server_error(api_server: str) -> None:
    api = schemathesis.openapi.from_url(f"{api_server}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 25
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=10,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: Any) -> None:
            response = case.call(headers=_STATE["auth"], timeout=30)
            case.validate_response(response, checks=[not_a_server_error])
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"}, body
                assert body["error"]["code"] and body["error"]["message"]

        try:
            fuzz()
        except Exception as exc:  # collect every operation's failure, then report them all
            failures.append(f"{operation.label}: {str(exc)[:2000]}")
    assert not failures, "\n\n".join(failures)

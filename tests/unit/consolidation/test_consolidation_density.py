from __future__ import annotations

import pytest

from memvault.consolidation import ContentDensity, DensityClassifier

DENSE = ContentDensity.DENSE
SPARSE = ContentDensity.SPARSE

CODE = "def load(path):\n    with open(path) as f:\n        return json.load(f)\n"
JSON = '{"user_id": 4821, "plan": "pro", "limits": {"rpm": 600, "tpm": 90000}}'
KEY_VALUE = "host: db.internal\nport: 5432\nuser: svc_reader\npool_size: 20"
TABLE = "| id | status |\n|----|--------|\n| 17 | done |\n| 18 | open |"
CSV = "name,age,city\nann,31,Oslo\nbob,27,Rome"
IDENTIFIERS = (
    "Deployed build 7f3a9c21 of api_gateway to eu-west-1, ticket OPS-4411, "
    "config at infra/prod/gateway.yaml"
)
PROSE = [
    "The user mentioned that they really enjoy hiking on weekends and prefer quiet places.",
    "We talked about the team's plans for the next quarter. Everyone seemed happy with the "
    "direction, and Sarah said she would like to take on more mentoring.",
    "Alice prefers dark mode.",
    "We hiked, swam, ate pasta, and slept well on the trip.",
    "I met Carol on May 5 and we had lunch together; she has 2 kids.",
]


@pytest.mark.parametrize("text", [CODE, JSON, KEY_VALUE, TABLE, CSV, IDENTIFIERS])
def test_dense_examples(text: str) -> None:
    assert DensityClassifier().classify(text) is DENSE


@pytest.mark.parametrize("text", PROSE)
def test_prose_is_sparse(text: str) -> None:
    assert DensityClassifier().classify(text) is SPARSE


def test_each_signal_responds_to_its_own_kind_of_content() -> None:
    c = DensityClassifier()
    assert c.signals(CODE).code > 0.5
    assert c.signals(JSON).structured == 1.0
    assert c.signals(KEY_VALUE).structured == 1.0
    assert c.signals(IDENTIFIERS).identifiers > 0.5
    assert c.signals(JSON).numeric > 0.5
    assert c.signals(KEY_VALUE).lines > 0.5
    prose = c.signals(PROSE[1])
    assert (prose.code, prose.structured, prose.identifiers, prose.numeric, prose.lines) == (
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    )


def test_score_stays_in_unit_interval_with_custom_weights() -> None:
    c = DensityClassifier(weights=(3, 3, 3, 3, 3))
    assert 0.0 <= c.signals(JSON).score <= 1.0
    assert c.signals("").score == 0.0


def test_threshold_decides() -> None:
    assert DensityClassifier(threshold=1.0).classify(KEY_VALUE) is SPARSE
    assert DensityClassifier(threshold=0.05).classify(PROSE[4]) is DENSE


def test_invalid_settings_rejected() -> None:
    with pytest.raises(ValueError):
        DensityClassifier(threshold=0.0)
    with pytest.raises(ValueError):
        DensityClassifier(weights=(0, 0, 0, 0, 0))
    with pytest.raises(ValueError):
        DensityClassifier(weights=(1, -1, 1, 1, 1))


def test_majority_vote(make_entry) -> None:
    c = DensityClassifier()
    dense = [make_entry(f"d{i}", text) for i, text in enumerate([CODE, JSON, KEY_VALUE])]
    sparse = [make_entry(f"s{i}", text) for i, text in enumerate(PROSE[:3])]
    assert c.classify_group(dense[:2] + sparse[:1]) is DENSE
    assert c.classify_group(dense[:1] + sparse[:2]) is SPARSE
    # a tie preserves: summarising dense content loses facts for good
    assert c.classify_group(dense[:2] + sparse[:2]) is DENSE
    assert c.classify_group([]) is SPARSE

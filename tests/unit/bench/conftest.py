"""Tiny synthetic LoCoMo and LongMemEval files (the real datasets are never needed by tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def locomo_data() -> list[dict[str, Any]]:
    """One conversation in LoCoMo's published shape, with the dataset's known quirks."""
    return [
        {
            "sample_id": "conv-a",
            "conversation": {
                "speaker_a": "Alice",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Alice", "dia_id": "D1:1", "text": "Hi Bob, how was your week?"},
                    {
                        "speaker": "Bob",
                        "dia_id": "D1:2",
                        "text": "Great! I adopted a greyhound puppy named Biscuit at the shelter.",
                    },
                    {
                        "speaker": "Alice",
                        "dia_id": "D1:3",
                        "text": "Lovely. I started learning to play the cello last month.",
                    },
                    {
                        "speaker": "Bob",
                        "dia_id": "D1:4",
                        "text": "Look at this picture from our hike.",
                        "img_url": ["https://example.invalid/lake.jpg"],
                        "blip_caption": "a photo of a mountain lake at sunset",
                    },
                ],
                "session_2_date_time": "10:04 am on 19 June, 2023",
                "session_2": [
                    {
                        "speaker": "Alice",
                        "dia_id": "D2:1",
                        "text": "I performed my first cello recital at the conservatory yesterday.",
                    },
                    {
                        "speaker": "Bob",
                        "dia_id": "D2:2",
                        "text": "Congratulations! Biscuit learned to fetch frisbees at the beach.",
                    },
                    {
                        "speaker": "Alice",
                        "dia_id": "D2:3",
                        "text": "My sister Clara is moving to Lisbon in September.",
                    },
                    {
                        "speaker": "Bob",
                        "dia_id": "D2:4",
                        "text": "Lisbon is beautiful, I went there for a conference once.",
                    },
                ],
                # The published file has dates of sessions that hold no turns.
                "session_3_date_time": "9:00 am on 1 July, 2023",
            },
            "qa": [
                {
                    "question": "What is the name of Bob's greyhound puppy?",
                    "answer": "Biscuit",
                    "evidence": ["D1:2"],
                    "category": 4,
                },
                {
                    "question": "When did Alice perform her cello recital?",
                    "answer": "18 June 2023",
                    "evidence": ["D2:01"],
                    "category": 2,
                },
                {
                    "question": "Which instrument has Alice been learning and performing?",
                    "answer": "cello",
                    "evidence": ["D1:3; D2:1"],
                    "category": 1,
                },
                {
                    "question": "Where might Alice visit her sister?",
                    "answer": 2023,
                    "evidence": ["D:2:3", "D9:9"],
                    "category": 3,
                },
                {
                    "question": "What is the name of Alice's puppy?",
                    "adversarial_answer": "Biscuit",
                    "evidence": ["D1:2"],
                    "category": 5,
                },
                {
                    "question": "Would Bob enjoy a trip to the mountains?",
                    "answer": "Likely yes",
                    "evidence": [],
                    "category": 3,
                },
                {
                    "question": "What did Bob eat?",
                    "answer": "nothing",
                    "evidence": ["D"],
                    "category": 4,
                },
            ],
        }
    ]


FILLER = [
    ("Can you suggest a recipe for lentil soup?", "Sure: onions, carrots, red lentils, cumin."),
    ("What is the capital of Australia?", "The capital of Australia is Canberra."),
    ("How do I fix a flat bicycle tyre?", "Remove the tube, find the puncture, patch it."),
    ("Recommend a book about Roman history.", "Try SPQR by Mary Beard."),
    ("How often should I water a cactus?", "Every two to three weeks in summer."),
    ("Explain how photosynthesis works.", "Plants turn light, water and CO2 into sugar."),
]


def _haystack(*, mark_answer: bool) -> dict[str, Any]:
    sessions: list[list[dict[str, Any]]] = [
        [
            {
                "role": "user",
                "content": "I just bought a red Ducati motorcycle for my daily commute.",
                **({"has_answer": True} if mark_answer else {}),
            },
            {"role": "assistant", "content": "Congratulations on the new bike! Ride safely."},
            {"role": "assistant", "content": "   "},
        ]
    ]
    sessions += [
        [{"role": "user", "content": q}, {"role": "assistant", "content": a}] for q, a in FILLER
    ]
    ids = ["answer_s1"] + [f"filler_{i}" for i in range(len(FILLER))]
    dates = ["2023/05/20 (Sat) 02:21"] + [
        f"2023/05/{21 + i} (Sun) 10:00" for i in range(len(FILLER))
    ]
    return {
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": sessions,
    }


def longmemeval_data() -> list[dict[str, Any]]:
    """Three questions in LongMemEval's published shape (one of them an abstention)."""
    return [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "What motorcycle did I buy for my commute?",
            "answer": "a red Ducati",
            **_haystack(mark_answer=True),
            "answer_session_ids": ["answer_s1"],
        },
        {
            "question_id": "q2",
            "question_type": "multi-session",
            "question": "Which soup recipe and which capital city did we talk about?",
            "answer": "lentil soup; Canberra",
            **_haystack(mark_answer=False),
            # No turn is marked has_answer for these sessions; one id is not in the haystack.
            "answer_session_ids": ["filler_0", "filler_1", "not_in_haystack"],
        },
        {
            "question_id": "q3_abs",
            "question_type": "single-session-user",
            "question": "What colour is my helicopter?",
            "answer": "You did not mention a helicopter",
            **_haystack(mark_answer=False),
            "answer_session_ids": ["answer_s1"],
        },
    ]


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` and return the path."""
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    """A synthetic LoCoMo file."""
    return write_json(tmp_path / "locomo.json", locomo_data())


@pytest.fixture
def longmemeval_file(tmp_path: Path) -> Path:
    """A synthetic LongMemEval file."""
    return write_json(tmp_path / "longmemeval.json", longmemeval_data())


@pytest.fixture
def locomo_raw() -> list[dict[str, Any]]:
    """The synthetic LoCoMo data, fresh for each test (tests may edit it)."""
    return locomo_data()


@pytest.fixture
def longmemeval_raw() -> list[dict[str, Any]]:
    """The synthetic LongMemEval data, fresh for each test (tests may edit it)."""
    return longmemeval_data()


@pytest.fixture
def write(tmp_path: Path) -> Any:
    """Writes data as JSON into the test's directory: ``write(data, name="data.json")``."""

    def _write(data: Any, name: str = "data.json") -> Path:
        return write_json(tmp_path / name, data)

    return _write

"""LoCoMo and LongMemEval loaders on synthetic files: records, normalisation, clear errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memvault.bench import (
    load_locomo,
    load_longmemeval,
    normalize_evidence,
    parse_locomo_datetime,
    parse_longmemeval_datetime,
)
from memvault.errors import MemoryValidationError


class TestParsing:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
            ("10:04 am on 19 June, 2023", datetime(2023, 6, 19, 10, 4, tzinfo=UTC)),
            ("12:09 am on 1 January, 2024", datetime(2024, 1, 1, 0, 9, tzinfo=UTC)),
            ("12:30 pm on 2 Sept, 2022", datetime(2022, 9, 2, 12, 30, tzinfo=UTC)),
            (" 7:05 PM on 31 Dec 2023 ", datetime(2023, 12, 31, 19, 5, tzinfo=UTC)),
        ],
    )
    def test_locomo_datetimes(self, text: str, expected: datetime) -> None:
        parsed = parse_locomo_datetime(text)
        assert parsed == expected
        assert parsed.tzinfo is UTC

    @pytest.mark.parametrize(
        "text", ["", "8 May 2023", "13:00 pm on 8 May, 2023", "1:00 pm on 30 February, 2023"]
    )
    def test_locomo_bad_datetimes(self, text: str) -> None:
        with pytest.raises(ValueError, match="date"):
            parse_locomo_datetime(text)

    def test_longmemeval_datetimes(self) -> None:
        expected = datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
        assert parse_longmemeval_datetime("2023/05/20 (Sat) 02:21") == expected
        assert parse_longmemeval_datetime("2023/05/20 02:21") == expected
        assert parse_longmemeval_datetime("2023-05-20T02:21:00") == expected
        assert parse_longmemeval_datetime("2023-05-20T04:21:00+02:00") == expected
        with pytest.raises(ValueError, match="unrecognised date"):
            parse_longmemeval_datetime("last Tuesday")

    def test_evidence_normalisation(self) -> None:
        ids, malformed = normalize_evidence(
            [" D1:3 ", "D30:05", "D:11:26", "D8:6; D9:17", "D9:1 D4:4", "D", "D1:3", ""]
        )
        assert ids == ("D1:3", "D30:5", "D11:26", "D8:6", "D9:17", "D9:1", "D4:4")
        assert malformed == ("D",)


class TestLocomoLoader:
    def test_records(self, locomo_file: Path) -> None:
        ds = load_locomo(locomo_file)
        assert ds.path == str(locomo_file)
        (conv,) = ds.conversations
        assert (conv.sample_id, conv.speaker_a, conv.speaker_b) == ("conv-a", "Alice", "Bob")
        assert conv.session_count == 2
        assert ds.turn_count == 8
        assert [t.dia_id for t in conv.turns][:5] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1"]
        first, caption = conv.turns[0], conv.turns[3]
        assert first.session == 1
        assert first.session_datetime == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert conv.turns[4].session == 2
        assert conv.turns[4].session_datetime == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)
        assert first.blip_caption is None
        assert caption.blip_caption == "a photo of a mountain lake at sunset"

    def test_questions_and_evidence(self, locomo_file: Path) -> None:
        conv = load_locomo(locomo_file).conversations[0]
        qa = {q.question: q for q in conv.qas}
        assert len(conv.qas) == 7
        puppy = qa["What is the name of Bob's greyhound puppy?"]
        assert (puppy.category, puppy.category_name, puppy.answer) == (4, "single-hop", "Biscuit")
        assert puppy.evidence == ("D1:2",)
        assert qa["When did Alice perform her cello recital?"].evidence == ("D2:1",)
        assert qa["Which instrument has Alice been learning and performing?"].evidence == (
            "D1:3",
            "D2:1",
        )
        sister = qa["Where might Alice visit her sister?"]
        assert sister.answer == "2023"  # numeric answers become strings
        assert sister.evidence == ("D2:3",)
        assert sister.dropped_evidence == ("D9:9",)  # names no turn of the conversation
        adversarial = qa["What is the name of Alice's puppy?"]
        assert (adversarial.category, adversarial.answer) == (5, None)
        assert qa["Would Bob enjoy a trip to the mountains?"].evidence == ()
        assert qa["What did Bob eat?"].dropped_evidence == ("D",)
        assert conv.dropped_evidence_ids == 2
        assert load_locomo(locomo_file).dropped_evidence_ids == 2
        assert load_locomo(locomo_file).qa_count == 7

    def test_records_are_frozen(self, locomo_file: Path) -> None:
        turn = load_locomo(locomo_file).conversations[0].turns[0]
        with pytest.raises(AttributeError):
            turn.text = "changed"  # type: ignore[misc]

    def test_missing_file(self, tmp_path: Path) -> None:
        path = tmp_path / "absent.json"
        with pytest.raises(MemoryValidationError, match=r"cannot read LoCoMo file .*absent\.json"):
            load_locomo(path)

    def test_directory(self, tmp_path: Path) -> None:
        with pytest.raises(MemoryValidationError, match="is a directory"):
            load_locomo(tmp_path)

    def test_not_json(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.json"
        path.write_text("[{", encoding="utf-8")
        with pytest.raises(MemoryValidationError, match=r"bad\.json is not valid JSON"):
            load_locomo(path)

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ({"not": "a list"}, "expected a JSON array at the top level, got an object"),
            ([], "holds no conversations"),
            ([3], "conversation 0: expected an object, got a number"),
        ],
    )
    def test_wrong_top_level_shape(self, write: Any, data: Any, message: str) -> None:
        path = write(data, "shape.json")
        with pytest.raises(MemoryValidationError, match=message):
            load_locomo(path)

    @pytest.mark.parametrize(
        ("edit", "message"),
        [
            (lambda d: d[0].pop("conversation"), "conversation 0 .conv-a.: missing or invalid"),
            (
                lambda d: d[0]["conversation"].pop("speaker_a"),
                "conversation 0 .conv-a.: missing key 'speaker_a'",
            ),
            (
                lambda d: d[0]["conversation"].update(session_1_date_time="yesterday"),
                "session_1_date_time: unrecognised date 'yesterday'",
            ),
            (
                lambda d: d[0]["conversation"].pop("session_2_date_time"),
                "missing key 'session_2_date_time'",
            ),
            (
                lambda d: d[0]["conversation"]["session_1"][1].update(dia_id="turn-2"),
                "session_1 turn 1: malformed dia_id 'turn-2'",
            ),
            (
                lambda d: d[0]["conversation"]["session_2"][0].update(dia_id="D1:1"),
                "duplicate dia_id D1:1",
            ),
            (
                lambda d: d[0]["conversation"]["session_1"][0].pop("text"),
                "session_1 turn 0: missing key 'text'",
            ),
            (lambda d: d[0]["qa"][1].update(category="2"), "qa 1: 'category' must be an integer"),
            (lambda d: d[0]["qa"][0].update(evidence=[3]), "qa 0: 'evidence' must be an array"),
            (lambda d: d[0]["qa"][0].pop("question"), "qa 0: missing key 'question'"),
        ],
    )
    def test_malformed_files_name_file_and_problem(
        self, locomo_raw: list[dict[str, Any]], write: Any, edit: Any, message: str
    ) -> None:
        edit(locomo_raw)
        path = write(locomo_raw, "broken.json")
        with pytest.raises(MemoryValidationError, match=message) as info:
            load_locomo(path)
        assert str(path) in str(info.value)
        assert "\n" not in str(info.value)


class TestLongMemEvalLoader:
    def test_records(self, longmemeval_file: Path) -> None:
        ds = load_longmemeval(longmemeval_file)
        assert [i.question_id for i in ds.items] == ["q1", "q2", "q3_abs"]
        q1, q2, q3 = ds.items
        assert q1.question_type == "single-session-user"
        assert q1.question_date == datetime(2023, 6, 1, 9, 0, tzinfo=UTC)
        assert q1.answer == "a red Ducati"
        assert q1.answer_session_ids == ("answer_s1",)
        assert len(q1.sessions) == 7
        s1 = q1.sessions[0]
        assert (s1.session_id, s1.date) == ("answer_s1", datetime(2023, 5, 20, 2, 21, tzinfo=UTC))
        assert [(t.role, t.index, t.has_answer) for t in s1.turns] == [
            ("user", 0, True),
            ("assistant", 1, False),
            ("assistant", 2, False),
        ]
        assert q1.turn_count == 15
        assert not q1.is_abstention and q3.is_abstention
        assert q2.answer_session_ids == ("filler_0", "filler_1")
        assert q2.dropped_answer_session_ids == ("not_in_haystack",)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(MemoryValidationError, match="cannot read LongMemEval file"):
            load_longmemeval(tmp_path / "nope.json")

    @pytest.mark.parametrize(
        ("edit", "message"),
        [
            (lambda d: d[0].pop("question_id"), r"question 0: missing key 'question_id'"),
            (lambda d: d[1].pop("haystack_sessions"), r"question 1 \(q2\): missing key"),
            (
                lambda d: d[0].update(haystack_dates=d[0]["haystack_dates"][:-1]),
                r"question 0 \(q1\): haystack_session_ids \(7\), haystack_dates \(6\) and "
                r"haystack_sessions \(7\) must have the same length",
            ),
            (
                lambda d: d[0]["haystack_dates"].__setitem__(2, "soon"),
                r"session 2 \(filler_1\): haystack_dates: unrecognised date 'soon'",
            ),
            (
                lambda d: d[0]["haystack_sessions"][0][0].update(has_answer="yes"),
                r"session 0 \(answer_s1\), turn 0: 'has_answer' must be a boolean",
            ),
            (
                lambda d: d[0]["haystack_sessions"][1].__setitem__(0, "hello"),
                r"turn 0: expected an object with role and content, got a string",
            ),
            (
                lambda d: d[0].update(answer_session_ids="answer_s1"),
                r"'answer_session_ids' must be an array of strings",
            ),
            (lambda d: d[2].update(question_date="soon"), r"q3_abs\): question_date"),
        ],
    )
    def test_malformed_files_name_file_and_problem(
        self, longmemeval_raw: list[dict[str, Any]], write: Any, edit: Any, message: str
    ) -> None:
        edit(longmemeval_raw)
        path = write(longmemeval_raw, "broken.json")
        with pytest.raises(MemoryValidationError, match=message) as info:
            load_longmemeval(path)
        assert str(info.value).startswith(f"LongMemEval file {path}: ")

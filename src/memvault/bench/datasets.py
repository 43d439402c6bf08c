"""Loaders of the benchmark datasets into typed, frozen records.

* LoCoMo (``locomo10.json``): a JSON array of conversations, each with ``conversation``
  (``speaker_a``, ``speaker_b``, ``session_<n>`` turn lists and ``session_<n>_date_time``
  strings such as ``"1:56 pm on 8 May, 2023"``) and ``qa`` (question, answer, category,
  evidence dialogue ids).
* LongMemEval (``longmemeval_s.json`` and friends): a JSON array of questions, each with its own
  haystack of user/assistant sessions.

Both loaders validate the whole file and raise :class:`~memvault.errors.MemoryValidationError`
naming the file and the offending record, so a wrong or truncated download fails in one clear
line instead of a ``KeyError`` deep inside a runner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault.errors import MemoryValidationError

__all__ = [
    "LOCOMO_CATEGORIES",
    "LocomoConversation",
    "LocomoDataset",
    "LocomoQA",
    "LocomoTurn",
    "LongMemEvalDataset",
    "LongMemEvalItem",
    "LongMemEvalSession",
    "LongMemEvalTurn",
    "load_locomo",
    "load_longmemeval",
    "normalize_evidence",
    "parse_locomo_datetime",
    "parse_longmemeval_datetime",
]

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo QA category ids and their names (DESIGN section 9)."""

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}

# "1:56 pm on 8 May, 2023". Parsed by hand rather than with strptime because %B and %p follow
# the process locale, and a benchmark must not change its dates with LC_TIME.
_LOCOMO_DT = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
# "2023/05/20 (Sat) 02:21"; the weekday is redundant and ignored.
_LME_DT = re.compile(
    r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?\s*$"
)
# A well-formed dialogue id is D<session>:<turn>; the published file also has "D30:05" and
# "D:11:26", which mean D30:5 and D11:26.
_EVIDENCE_ID = re.compile(r"^D:?(\d+):(\d+)$")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def parse_locomo_datetime(text: str) -> datetime:
    """Parse a LoCoMo session time such as ``"1:56 pm on 8 May, 2023"`` into an aware UTC datetime.

    The dataset gives no time zone; the times are taken as UTC so every session keeps its order
    and its calendar date.

    Raises:
        ValueError: the text is not in that format or names an impossible date.
    """
    m = _LOCOMO_DT.match(text)
    if m is None:
        msg = f"unrecognised date {text!r} (expected e.g. '1:56 pm on 8 May, 2023')"
        raise ValueError(msg)
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        msg = f"unrecognised date {text!r} (expected e.g. '1:56 pm on 8 May, 2023')"
        raise ValueError(msg)
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"impossible date {text!r}: {exc}") from None


def parse_longmemeval_datetime(text: str) -> datetime:
    """Parse a LongMemEval time such as ``"2023/05/20 (Sat) 02:21"`` into an aware UTC datetime.

    ISO 8601 strings are accepted too (a value without an offset is taken as UTC).

    Raises:
        ValueError: the text is in neither format or names an impossible date.
    """
    m = _LME_DT.match(text)
    if m is not None:
        year, month, day, hour, minute = m.groups()
        try:
            return datetime(
                int(year), int(month), int(day), int(hour or 0), int(minute or 0), tzinfo=UTC
            )
        except ValueError as exc:
            raise ValueError(f"impossible date {text!r}: {exc}") from None
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        msg = f"unrecognised date {text!r} (expected e.g. '2023/05/20 (Sat) 02:21')"
        raise ValueError(msg) from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def normalize_evidence(entries: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Normalise raw LoCoMo evidence entries into dialogue ids.

    Entries are stripped and split on ``;``, ``,`` and whitespace (``"D8:6; D9:17"`` holds two
    ids); each piece is rewritten as ``D<session>:<turn>`` without leading zeros
    (``D30:05`` -> ``D30:5``, ``D:11:26`` -> ``D11:26``). Returns ``(ids, malformed)``: the
    well-formed ids in first-seen order without duplicates, and the pieces that are not ids at
    all (such as ``"D"``).
    """
    ids: list[str] = []
    malformed: list[str] = []
    for entry in entries:
        for piece in _EVIDENCE_SPLIT.split(entry.strip()):
            if not piece:
                continue
            m = _EVIDENCE_ID.match(piece)
            if m is None:
                malformed.append(piece)
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm not in ids:
                ids.append(norm)
    return tuple(ids), tuple(malformed)


# -- LoCoMo ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    """A dialogue turn of a LoCoMo conversation, with its session number and date."""

    dia_id: str
    speaker: str
    text: str
    session: int
    session_datetime: datetime
    blip_caption: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoQA:
    """A LoCoMo question with its gold evidence.

    ``evidence`` holds normalised dialogue ids that exist in the conversation; ``dropped_evidence``
    the raw pieces that were malformed or name no turn of the conversation.
    """

    question: str
    answer: str | None
    category: int
    evidence: tuple[str, ...]
    dropped_evidence: tuple[str, ...] = ()

    @property
    def category_name(self) -> str:
        """Return the category's name (``multi-hop``, ``temporal``, ...) or ``category-<n>``."""
        return LOCOMO_CATEGORIES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    """A LoCoMo conversation holds its turns in order and its questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[LocomoTurn, ...]
    qas: tuple[LocomoQA, ...]

    @property
    def session_count(self) -> int:
        """Return how many sessions have at least one turn."""
        return len({t.session for t in self.turns})

    @property
    def dropped_evidence_ids(self) -> int:
        """Return how many evidence pieces of its questions were dropped (malformed or absent)."""
        return sum(len(q.dropped_evidence) for q in self.qas)


@dataclass(frozen=True, slots=True)
class LocomoDataset:
    """A loaded LoCoMo file holds its path and its conversations."""

    path: str
    conversations: tuple[LocomoConversation, ...]

    @property
    def turn_count(self) -> int:
        """Return the total number of turns."""
        return sum(len(c.turns) for c in self.conversations)

    @property
    def qa_count(self) -> int:
        """Return the total number of questions (every category)."""
        return sum(len(c.qas) for c in self.conversations)

    @property
    def dropped_evidence_ids(self) -> int:
        """Return the total number of dropped evidence pieces."""
        return sum(c.dropped_evidence_ids for c in self.conversations)


class _Where:
    """Builds error messages that name the file and the record."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path

    def fail(self, where: str, problem: str) -> MemoryValidationError:
        prefix = f"{self.kind} file {self.path}"
        return MemoryValidationError(
            f"{prefix}: {where}: {problem}" if where else f"{prefix}: {problem}"
        )


def _read_json(path: str | Path, kind: str) -> tuple[Any, _Where]:
    p = Path(path)
    where = _Where(kind, p)
    if p.is_dir():
        msg = f"cannot read {kind} file {p}: it is a directory"
        raise MemoryValidationError(msg)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        msg = f"cannot read {kind} file {p}: {exc.strerror or exc}"
        raise MemoryValidationError(msg) from None
    try:
        data = json.loads(raw)
    except UnicodeDecodeError as exc:
        msg = f"{kind} file {p} is not UTF-8 text: {exc.reason}"
        raise MemoryValidationError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{kind} file {p} is not valid JSON: {exc.msg} (line {exc.lineno})"
        raise MemoryValidationError(msg) from None
    if not isinstance(data, list):
        raise where.fail("", f"expected a JSON array at the top level, got {_type(data)}")
    return data, where


def _type(value: object) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _str(obj: Mapping[str, Any], key: str, where: _Where, loc: str) -> str:
    if key not in obj:
        raise where.fail(loc, f"missing key {key!r}")
    value = obj[key]
    if not isinstance(value, str):
        raise where.fail(loc, f"{key!r} must be a string, got {_type(value)}")
    return value


def _answer(value: object) -> str | None:
    # Answers are strings or numbers (years such as 2022); the adversarial category has none.
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def load_locomo(path: str | Path) -> LocomoDataset:
    """Load a LoCoMo file (``locomo10.json``) into a :class:`LocomoDataset`.

    Evidence ids are normalised (see :func:`normalize_evidence`); ids naming no turn of the
    conversation are dropped and counted in each question's ``dropped_evidence``.

    Raises:
        MemoryValidationError: the file is missing, unreadable, not JSON, or not in LoCoMo's
            format (the message names the file, the conversation and the problem).
    """
    data, where = _read_json(path, "LoCoMo")
    if not data:
        raise where.fail("", "it holds no conversations")
    conversations = [_locomo_conversation(item, i, where) for i, item in enumerate(data)]
    seen: set[str] = set()
    for conv in conversations:
        if conv.sample_id in seen:
            raise where.fail("", f"duplicate sample_id {conv.sample_id!r}")
        seen.add(conv.sample_id)
    return LocomoDataset(path=str(path), conversations=tuple(conversations))


def _locomo_conversation(item: object, index: int, where: _Where) -> LocomoConversation:
    loc = f"conversation {index}"
    if not isinstance(item, dict):
        raise where.fail(loc, f"expected an object, got {_type(item)}")
    sample_id = item.get("sample_id", f"conversation-{index}")
    if not isinstance(sample_id, str):
        raise where.fail(loc, "'sample_id' must be a string")
    loc = f"conversation {index} ({sample_id})"
    conv = item.get("conversation")
    if not isinstance(conv, dict):
        raise where.fail(loc, "missing or invalid 'conversation' object")
    speaker_a = _str(conv, "speaker_a", where, loc)
    speaker_b = _str(conv, "speaker_b", where, loc)
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION_KEY.match(key)) is not None and conv[key] is not None
    )
    turns: list[LocomoTurn] = []
    for number, key in sessions:
        raw_turns = conv[key]
        if not isinstance(raw_turns, list):
            raise where.fail(loc, f"{key!r} must be an array of turns, got {_type(raw_turns)}")
        if not raw_turns:
            continue
        date_key = f"{key}_date_time"
        date_text = _str(conv, date_key, where, loc)
        try:
            when = parse_locomo_datetime(date_text)
        except ValueError as exc:
            raise where.fail(loc, f"{date_key}: {exc}") from None
        for t_index, raw in enumerate(raw_turns):
            turns.append(_locomo_turn(raw, number, when, where, f"{loc}, {key} turn {t_index}"))
    if not turns:
        raise where.fail(loc, "it has no dialogue turns (no non-empty session_<n> arrays)")
    ids = [t.dia_id for t in turns]
    known = set(ids)
    if len(known) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise where.fail(loc, f"duplicate dia_id {', '.join(dupes[:5])}")
    raw_qas = item.get("qa", [])
    if not isinstance(raw_qas, list):
        raise where.fail(loc, f"'qa' must be an array, got {_type(raw_qas)}")
    qas = [_locomo_qa(raw, known, where, f"{loc}, qa {q}") for q, raw in enumerate(raw_qas)]
    return LocomoConversation(
        sample_id=sample_id,
        speaker_a=speaker_a,
        speaker_b=speaker_b,
        turns=tuple(turns),
        qas=tuple(qas),
    )


def _locomo_turn(raw: object, session: int, when: datetime, where: _Where, loc: str) -> LocomoTurn:
    if not isinstance(raw, dict):
        raise where.fail(loc, f"expected an object, got {_type(raw)}")
    dia_id = _str(raw, "dia_id", where, loc).strip()
    ids, _ = normalize_evidence([dia_id])
    if len(ids) != 1:
        raise where.fail(loc, f"malformed dia_id {dia_id!r} (expected D<session>:<turn>)")
    caption = raw.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise where.fail(loc, f"'blip_caption' must be a string, got {_type(caption)}")
    if caption is not None:
        caption = caption.strip() or None
    return LocomoTurn(
        dia_id=ids[0],
        speaker=_str(raw, "speaker", where, loc),
        text=_str(raw, "text", where, loc),
        session=session,
        session_datetime=when,
        blip_caption=caption,
    )


def _locomo_qa(raw: object, known: set[str], where: _Where, loc: str) -> LocomoQA:
    if not isinstance(raw, dict):
        raise where.fail(loc, f"expected an object, got {_type(raw)}")
    question = _str(raw, "question", where, loc)
    category = raw.get("category")
    if isinstance(category, bool) or not isinstance(category, int):
        raise where.fail(loc, f"'category' must be an integer, got {_type(category)}")
    evidence = raw.get("evidence", [])
    if isinstance(evidence, str):
        evidence = [evidence]
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise where.fail(loc, "'evidence' must be an array of dialogue id strings")
    ids, malformed = normalize_evidence(evidence)
    valid = tuple(i for i in ids if i in known)
    absent = tuple(i for i in ids if i not in known)
    return LocomoQA(
        question=question,
        answer=_answer(raw.get("answer")),
        category=category,
        evidence=valid,
        dropped_evidence=malformed + absent,
    )


# -- LongMemEval ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LongMemEvalTurn:
    """A turn of a LongMemEval session; ``has_answer`` marks the evidence turns."""

    role: str
    content: str
    index: int
    has_answer: bool = False


@dataclass(frozen=True, slots=True)
class LongMemEvalSession:
    """A haystack session holds its id, its date and its turns."""

    session_id: str
    date: datetime
    turns: tuple[LongMemEvalTurn, ...]


@dataclass(frozen=True, slots=True)
class LongMemEvalItem:
    """A LongMemEval question with its haystack of sessions.

    ``answer_session_ids`` holds the evidence sessions present in the haystack;
    ``dropped_answer_session_ids`` those the file names but the haystack lacks.
    """

    question_id: str
    question_type: str
    question: str
    answer: str | None
    question_date: datetime | None
    sessions: tuple[LongMemEvalSession, ...]
    answer_session_ids: tuple[str, ...]
    dropped_answer_session_ids: tuple[str, ...] = ()

    @property
    def is_abstention(self) -> bool:
        """Return True for abstention questions (id ending ``_abs``): no answer in the history."""
        return self.question_id.endswith("_abs")

    @property
    def turn_count(self) -> int:
        """Return the number of turns in the haystack."""
        return sum(len(s.turns) for s in self.sessions)


@dataclass(frozen=True, slots=True)
class LongMemEvalDataset:
    """A loaded LongMemEval file holds its path and its questions."""

    path: str
    items: tuple[LongMemEvalItem, ...]


def load_longmemeval(path: str | Path) -> LongMemEvalDataset:
    """Load a LongMemEval file (a JSON array of questions) into a :class:`LongMemEvalDataset`.

    Raises:
        MemoryValidationError: the file is missing, unreadable, not JSON, or not in
            LongMemEval's format (the message names the file, the question and the problem).
    """
    data, where = _read_json(path, "LongMemEval")
    if not data:
        raise where.fail("", "it holds no questions")
    items = [_lme_item(raw, i, where) for i, raw in enumerate(data)]
    return LongMemEvalDataset(path=str(path), items=tuple(items))


def _str_list(obj: Mapping[str, Any], key: str, where: _Where, loc: str) -> list[str]:
    if key not in obj:
        raise where.fail(loc, f"missing key {key!r}")
    value = obj[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise where.fail(loc, f"{key!r} must be an array of strings")
    return value


def _lme_item(raw: object, index: int, where: _Where) -> LongMemEvalItem:
    loc = f"question {index}"
    if not isinstance(raw, dict):
        raise where.fail(loc, f"expected an object, got {_type(raw)}")
    qid = _str(raw, "question_id", where, loc)
    loc = f"question {index} ({qid})"
    qtype = _str(raw, "question_type", where, loc)
    question = _str(raw, "question", where, loc)
    qdate: datetime | None = None
    if raw.get("question_date") is not None:
        text = _str(raw, "question_date", where, loc)
        try:
            qdate = parse_longmemeval_datetime(text)
        except ValueError as exc:
            raise where.fail(loc, f"question_date: {exc}") from None
    session_ids = _str_list(raw, "haystack_session_ids", where, loc)
    dates = _str_list(raw, "haystack_dates", where, loc)
    if "haystack_sessions" not in raw:
        raise where.fail(loc, "missing key 'haystack_sessions'")
    raw_sessions = raw["haystack_sessions"]
    if not isinstance(raw_sessions, list):
        raise where.fail(loc, "'haystack_sessions' must be an array of sessions")
    if not len(session_ids) == len(dates) == len(raw_sessions):
        raise where.fail(
            loc,
            f"haystack_session_ids ({len(session_ids)}), haystack_dates ({len(dates)}) and "
            f"haystack_sessions ({len(raw_sessions)}) must have the same length",
        )
    sessions: list[LongMemEvalSession] = []
    for s_index, (sid, date_text, raw_turns) in enumerate(
        zip(session_ids, dates, raw_sessions, strict=True)
    ):
        s_loc = f"{loc}, session {s_index} ({sid})"
        try:
            when = parse_longmemeval_datetime(date_text)
        except ValueError as exc:
            raise where.fail(s_loc, f"haystack_dates: {exc}") from None
        if not isinstance(raw_turns, list):
            raise where.fail(s_loc, f"expected an array of turns, got {_type(raw_turns)}")
        turns = tuple(
            _lme_turn(t, t_index, where, f"{s_loc}, turn {t_index}")
            for t_index, t in enumerate(raw_turns)
        )
        sessions.append(LongMemEvalSession(session_id=sid, date=when, turns=turns))
    answer_ids = _str_list(raw, "answer_session_ids", where, loc)
    present = set(session_ids)
    kept = tuple(dict.fromkeys(a for a in answer_ids if a in present))
    dropped = tuple(a for a in answer_ids if a not in present)
    return LongMemEvalItem(
        question_id=qid,
        question_type=qtype,
        question=question,
        answer=_answer(raw.get("answer")),
        question_date=qdate,
        sessions=tuple(sessions),
        answer_session_ids=kept,
        dropped_answer_session_ids=dropped,
    )


def _lme_turn(raw: object, index: int, where: _Where, loc: str) -> LongMemEvalTurn:
    if not isinstance(raw, dict):
        raise where.fail(loc, f"expected an object with role and content, got {_type(raw)}")
    has_answer = raw.get("has_answer", False)
    if not isinstance(has_answer, bool):
        raise where.fail(loc, f"'has_answer' must be a boolean, got {_type(has_answer)}")
    return LongMemEvalTurn(
        role=_str(raw, "role", where, loc),
        content=_str(raw, "content", where, loc),
        index=index,
        has_answer=has_answer,
    )

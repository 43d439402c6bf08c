"""Heuristic content-density classification for dual-mode consolidation.

Dense content (code, structured data, identifiers, figures) loses exactly what matters when an
LLM paraphrases it, so dual-mode consolidation preserves it verbatim (extractive) and only
summarises sparse, conversational content (abstractive). The classifier needs no model: five
weighted signals, each in ``[0, 1]``, are summed and compared with a threshold. A group is then
classified by majority vote over its entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from memvault.consolidation._text import IDENTIFIER
from memvault.models import MemoryEntry

__all__ = [
    "ContentDensity",
    "DensityClassifier",
    "DensitySignals",
]


class ContentDensity(StrEnum):
    """Whether content is dense (keep verbatim) or sparse (safe to summarise)."""

    DENSE = "dense"
    SPARSE = "sparse"


@dataclass(frozen=True, slots=True)
class DensitySignals:
    """The five signal values of one text (each in ``[0, 1]``) and their weighted score."""

    code: float
    structured: float
    identifiers: float
    numeric: float
    lines: float
    score: float


_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |return\b|async def |await |if .*:\s*$|"
    r"for .*:\s*$|while .*:\s*$|fn |let |const |var |function\b|public |private |#include|"
    r"SELECT\b|INSERT\b|UPDATE\b|CREATE\b|\$ |>>> |@\w+)"
    r"|[;{}]\s*$|=>|->|==|!=|\w\(.*\)\s*[:;{]?\s*$|\bself\.|`{3}",
)
_KEY_VALUE = re.compile(r"^\s*[\"']?[\w.-]+[\"']?\s*[:=]\s*\S")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TOKEN = re.compile(r"\S+")


def _is_csv_row(line: str) -> bool:
    # Short comma-separated fields without sentence punctuation; prose with a few commas has
    # long clauses and ends in a full stop.
    fields = line.split(",")
    return (
        len(fields) >= 3
        and all(len(f.strip()) <= 30 for f in fields)
        and not line.rstrip().endswith((".", "!", "?"))
    )


def _clip(value: float) -> float:
    return max(0.0, min(1.0, value))


class DensityClassifier:
    """Classify text as DENSE or SPARSE from five weighted heuristic signals.

    The signals: the share of lines that look like code; structured data (whole-text JSON, or
    the share of ``key: value``/table/CSV lines); identifier density (snake_case, camelCase,
    dotted paths, hashes, ticket keys per token); numeric density (tokens containing digits);
    and line structure (many short lines, indentation, list markers instead of running
    sentences). Each density share is scaled so that a moderate share already counts fully,
    because one line of code among prose is noise but a third of the lines is not.
    """

    def __init__(
        self,
        *,
        threshold: float = 0.3,
        weights: tuple[float, float, float, float, float] = (0.3, 0.25, 0.2, 0.15, 0.1),
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError("weights must be non-negative and not all zero")
        total = sum(weights)
        self.threshold = threshold
        # Normalised so the score stays in [0, 1] whatever weights the caller passes.
        self.weights = tuple(w / total for w in weights)

    def signals(self, text: str) -> DensitySignals:
        """Compute the five signals of ``text`` and their weighted score."""
        lines = [line for line in text.splitlines() if line.strip()]
        tokens = _TOKEN.findall(text)
        if not lines or not tokens:
            return DensitySignals(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        n_lines = len(lines)

        code = _clip(sum(1 for line in lines if _CODE_LINE.search(line)) / n_lines / 0.4)

        structured = 0.0
        stripped = text.strip()
        if stripped[:1] in "{[":
            try:
                json.loads(stripped)
                structured = 1.0
            except json.JSONDecodeError:
                structured = 0.5  # broken JSON is still structured, just truncated or sloppy
        if structured < 1.0:
            rows = sum(
                1
                for line in lines
                if _KEY_VALUE.match(line) or _TABLE_ROW.match(line) or _is_csv_row(line)
            )
            structured = max(structured, _clip(rows / n_lines / 0.5))

        identifiers = _clip(sum(1 for t in tokens if IDENTIFIER.search(t)) / len(tokens) / 0.25)
        numeric = _clip(sum(1 for t in tokens if any(c.isdigit() for c in t)) / len(tokens) / 0.3)

        line_structure = 0.0
        if n_lines >= 3:
            shaped = sum(
                1
                for line in lines
                if line[:1] in " \t"
                or line.lstrip()[:2] in {"- ", "* ", "+ "}
                or (len(line) < 60 and not line.rstrip().endswith((".", "!", "?")))
            )
            line_structure = _clip(shaped / n_lines / 0.6)

        w_code, w_struct, w_ident, w_num, w_lines = self.weights
        score = (
            w_code * code
            + w_struct * structured
            + w_ident * identifiers
            + w_num * numeric
            + w_lines * line_structure
        )
        return DensitySignals(code, structured, identifiers, numeric, line_structure, score)

    def classify(self, text: str) -> ContentDensity:
        """DENSE if the weighted signal score reaches the threshold, else SPARSE."""
        if self.signals(text).score >= self.threshold:
            return ContentDensity.DENSE
        return ContentDensity.SPARSE

    def classify_group(self, entries: Sequence[MemoryEntry]) -> ContentDensity:
        """Majority vote over ``entries``; a tie counts as DENSE.

        A tie goes to DENSE because the two mistakes are not equal: preserving sparse text
        verbatim only costs space, while summarising dense text loses facts for good.
        """
        if not entries:
            return ContentDensity.SPARSE
        dense = sum(1 for e in entries if self.classify(e.content) is ContentDensity.DENSE)
        return ContentDensity.DENSE if 2 * dense >= len(entries) else ContentDensity.SPARSE

"""An agent's analysed text as an in-process inverted index, scored exactly as FTS5's ``bm25()``.

FTS5 answers a lexical search by walking the doclist of every phrase of the query, and its
``bm25()`` first counts the rows of each phrase with a second walk. The phrase that keeps a search
inside one agent (the row's ``scope_key``) matches every row of that agent, so each search paid a
walk over the agent's whole store before scoring anything: about 4 ms per search at 100k rows,
growing linearly, and the per-row ``bm25()`` callback and the join made the rest of the tail.

This index holds, per term, the positions (in the agent's :class:`AgentIndex`) of the rows that
contain it and how often; a search gathers the postings of its terms and scores them with numpy.
The cost is the number of postings of the query's terms in *this* agent's rows (bounded by term
pruning in big stores), never the size of the store or of other agents.

Scores are bit-for-bit FTS5's: the same Okapi BM25 expression in double precision, the same
statistics (row count and average row length of the whole table from FTS5's own averages record,
document frequencies from ``fts5vocab``), the same summation order. FTS5 stays the store of
record: it is what the index is rebuilt from, and what the other statistics come from.
"""

from __future__ import annotations

import unicodedata
from array import array
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memvault.retrieval.bm25 import K1, ROW_EXTRA_TOKENS, B

__all__ = ["LexicalIndex", "fts_token", "parse_fts_averages"]

_BULK_MIN = 2048
"""Loads of at least this many rows (and a quarter of the index) are sorted into the base."""


def fts_token(term: str) -> str:
    """``term`` as FTS5's ``unicode61 remove_diacritics 2`` tokenizer indexes it.

    Stored text is already analysed (lower-case letters and digits); only non-ASCII terms can
    differ, by their diacritics.
    """
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFKD", term)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _tokens(body: str) -> list[str]:
    if body.isascii():
        return body.split()
    return [fts_token(t) for t in body.split()]


def parse_fts_averages(block: bytes) -> tuple[int, int]:
    """``(rows, tokens)`` from FTS5's averages record (``<table>_data`` row 1).

    The record is the row count followed by the token total of each column, as SQLite varints.
    ``bm25()`` reads the same record for its ``avgdl``; reading it is one indexed row, where
    ``COUNT(*)`` on the table scans it.
    """
    values: list[int] = []
    i, n = 0, len(block)
    while i < n:
        value = 0
        for k in range(9):
            byte = block[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    if not values:
        return 0, 0
    return values[0], sum(values[1:])


class LexicalIndex:
    """Postings of one scope's rows, by position in the matching :class:`AgentIndex`.

    Postings live in two parts. The *base* is one compressed-sparse-row block (every term's
    rows in row order, with term frequencies) built with a single sort, so loading 100k rows
    costs a fraction of a second and holds no Python object per term. Rows added later go to a
    per-term *tail*; the tail is merged into the base once it holds a quarter as many postings,
    and at every compaction.
    """

    def __init__(self) -> None:
        self.n = 0
        self._vocab: dict[str, int] = {}
        self._offsets: NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._rows: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._freqs: NDArray[np.uint32] = np.zeros(0, dtype=np.uint32)
        self._tail_rows: dict[int, array[int]] = {}
        self._tail_freqs: dict[int, array[int]] = {}
        self._tail_size = 0
        self.lengths: NDArray[np.float64] = np.zeros(64, dtype=np.float64)
        """Row length in tokens as FTS5 counts it (every column: the text plus the scope key)."""

    def __len__(self) -> int:
        return self.n

    @property
    def postings(self) -> int:
        """How many (term, row) pairs the index holds (its size, for benchmarks)."""
        return len(self._rows) + self._tail_size

    def _grow_lengths(self, needed: int) -> None:
        if needed > len(self.lengths):
            grown = np.zeros(max(needed, 2 * len(self.lengths)), dtype=np.float64)
            grown[: self.n] = self.lengths[: self.n]
            self.lengths = grown

    def add(self, bodies: Sequence[str]) -> None:
        """Append rows (their stored analysed text) at positions ``n, n + 1, ...``."""
        k = len(bodies)
        if k == 0:
            return
        self._grow_lengths(self.n + k)
        if k >= _BULK_MIN and k * 4 >= self.n:
            # A load (or a batch large next to the index): one sort into the base.
            self._add_bulk(bodies)
            return
        vocab = self._vocab
        for i, body in enumerate(bodies):
            pos = self.n + i
            tokens = _tokens(body)
            self.lengths[pos] = len(tokens) + ROW_EXTRA_TOKENS
            counts: dict[str, int] = {}
            for t in tokens:
                counts[t] = counts.get(t, 0) + 1
            for term, tf in counts.items():
                tid = vocab.setdefault(term, len(vocab))
                rows = self._tail_rows.get(tid)
                if rows is None:
                    rows = self._tail_rows[tid] = array("i")
                    self._tail_freqs[tid] = array("I")
                rows.append(pos)
                self._tail_freqs[tid].append(tf)
            self._tail_size += len(counts)
        self.n += k
        if self._tail_size > max(4096, len(self._rows) // 4):
            self._rebuild(None)

    def _add_bulk(self, bodies: Sequence[str]) -> None:
        """Append many rows at once: their postings join the base in one sort."""
        split = [_tokens(b) for b in bodies]
        sizes = np.fromiter((len(t) for t in split), dtype=np.int64, count=len(split))
        self.lengths[self.n : self.n + len(split)] = sizes + ROW_EXTRA_TOKENS
        vocab = self._vocab
        tids = np.asarray(
            [vocab.setdefault(t, len(vocab)) for tokens in split for t in tokens], dtype=np.int64
        )
        rows = np.repeat(np.arange(self.n, self.n + len(split), dtype=np.int64), sizes)
        self.n += len(split)
        # One key per (term, row): sorting groups each term's rows, in row order; the run
        # lengths are the term frequencies.
        keys, freqs = np.unique((tids << 32) | rows, return_counts=True)
        self._rebuild((keys >> 32, (keys & 0xFFFFFFFF).astype(np.int32), freqs.astype(np.uint32)))

    def _parts(self) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.uint32]]:
        """Every posting as parallel (term, row, frequency) arrays, base then tail."""
        counts = np.diff(self._offsets)
        terms = [np.repeat(np.arange(len(counts), dtype=np.int64), counts)]
        rows = [self._rows]
        freqs = [self._freqs]
        for tid, tail in self._tail_rows.items():
            terms.append(np.full(len(tail), tid, dtype=np.int64))
            rows.append(np.frombuffer(tail, dtype=np.int32))
            freqs.append(np.frombuffer(self._tail_freqs[tid], dtype=np.uint32))
        return np.concatenate(terms), np.concatenate(rows), np.concatenate(freqs)

    def _rebuild(
        self,
        extra: tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.uint32]] | None,
        remap: NDArray[np.int32] | None = None,
    ) -> None:
        """One base from the current base, tail and ``extra`` postings (rows renumbered by
        ``remap``, where -1 drops a row); the tail is emptied."""
        terms, rows, freqs = self._parts()
        if extra is not None:
            terms = np.concatenate([terms, extra[0]])
            rows = np.concatenate([rows, extra[1]])
            freqs = np.concatenate([freqs, extra[2]])
        if remap is not None:
            rows = remap[rows]
            kept = rows >= 0
            terms, rows, freqs = terms[kept], rows[kept], freqs[kept]
        # Stable by term, so each term's rows stay in ascending (row) order.
        order = np.lexsort((rows, terms))
        terms = terms[order]
        self._rows = np.ascontiguousarray(rows[order], dtype=np.int32)
        self._freqs = np.ascontiguousarray(freqs[order], dtype=np.uint32)
        self._offsets = np.zeros(len(self._vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(self._vocab)), out=self._offsets[1:])
        self._tail_rows, self._tail_freqs, self._tail_size = {}, {}, 0

    def compact(self, keep: NDArray[np.int64]) -> None:
        """Keep only the rows at positions ``keep`` (ascending), renumbered ``0 .. len(keep)``."""
        remap = np.full(max(self.n, 1), -1, dtype=np.int32)
        remap[keep] = np.arange(len(keep), dtype=np.int32)
        self._rebuild(None, remap)
        lengths = self.lengths[keep].copy()
        self.lengths = lengths if len(lengths) else np.zeros(64, dtype=np.float64)
        self.n = len(keep)

    def _postings(self, tid: int) -> tuple[NDArray[np.int32], NDArray[np.uint32]]:
        """One term's rows and frequencies (views of the base, plus its tail if any)."""
        lo, hi = (
            (int(self._offsets[tid]), int(self._offsets[tid + 1]))
            if tid + 1 < len(self._offsets)
            else (0, 0)
        )
        rows, freqs = self._rows[lo:hi], self._freqs[lo:hi]
        tail = self._tail_rows.get(tid)
        if tail:
            rows = np.concatenate([rows, np.frombuffer(tail, dtype=np.int32)])
            freqs = np.concatenate([freqs, np.frombuffer(self._tail_freqs[tid], dtype=np.uint32)])
        return rows, freqs

    def search(
        self,
        terms: Sequence[str],
        idfs: Sequence[float],
        avgdl: float,
        mask: NDArray[np.bool_],
        rowids: NDArray[np.int64],
        k: int,
    ) -> list[tuple[int, float]]:
        """Top ``k`` ``(rowid, bm25)`` among masked rows holding any of ``terms``, best first.

        ``idfs`` are the terms' inverse document frequencies and ``avgdl`` the table's average
        row length (both of the whole FTS5 table, as ``bm25()`` takes them). Ties go to the
        larger rowid (the newer row), as the SQL ordering did.
        """
        if k <= 0 or self.n == 0:
            return []
        pos_parts: list[NDArray[np.int32]] = []
        val_parts: list[NDArray[np.float64]] = []
        for term, weight in zip(terms, idfs, strict=True):
            tid = self._vocab.get(fts_token(term))
            if tid is None:
                continue
            pos, counts = self._postings(tid)
            if not len(pos):
                continue
            freq = counts.astype(np.float64)
            doc_len = self.lengths[pos]
            # FTS5's expression, operation for operation, so the doubles come out identical.
            pos_parts.append(pos)
            val_parts.append(
                (weight * (freq * (K1 + 1.0))) / (freq + K1 * ((1.0 - B) + (B * doc_len) / avgdl))
            )
        if not pos_parts:
            return []
        rows: NDArray[np.int64]
        scores: NDArray[np.float64]
        if len(pos_parts) == 1:
            rows, scores = pos_parts[0].astype(np.int64), val_parts[0]
        else:
            all_pos = np.concatenate(pos_parts)
            all_val = np.concatenate(val_parts)
            # bincount adds in input order, i.e. term by term for each row, as bm25() sums.
            if len(all_pos) * 4 < self.n:
                unique, inverse = np.unique(all_pos, return_inverse=True)
                rows = unique.astype(np.int64)
                scores = np.asarray(np.bincount(inverse, weights=all_val), dtype=np.float64)
            else:
                dense = np.asarray(
                    np.bincount(all_pos, weights=all_val, minlength=self.n), dtype=np.float64
                )
                rows = np.flatnonzero(dense)
                scores = dense[rows]
        keep = mask[rows]
        rows, scores = rows[keep], scores[keep]
        if len(rows) == 0:
            return []
        if k < len(rows):
            # Everything scoring at least the k-th best (ties included), so the rowid
            # tie-break below decides exactly as ORDER BY did.
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            top = scores >= kth
            rows, scores = rows[top], scores[top]
        ids = rowids[rows]
        order = np.lexsort((-ids, -scores))[:k]
        return [(int(ids[i]), float(scores[i])) for i in order]

"""Long content split into overlapping, linked chunks instead of being refused (pure).

A memory longer than the store's ``max_content_chars`` becomes several memories of at most
:data:`CHUNK_CHARS` characters, cut at paragraph, then sentence, then word boundaries, each
repeating the last :data:`CHUNK_OVERLAP` characters of the one before so that a fact spanning a
cut is whole in one of them. The chunks share a ``chunk_group`` metadata key (a conversation
thread for retrieval: a hit lends relevance to its neighbours) and carry their position.
Chunks are small on purpose: the embedding model reads only the first few hundred tokens of a
text, so one 30,000-character memory would be found only by its opening.
"""

from __future__ import annotations

import re

__all__ = ["CHUNK_CHARS", "CHUNK_OVERLAP", "chunk_text"]

CHUNK_CHARS = 2000
"""The longest chunk, in characters."""

CHUNK_OVERLAP = 200
"""How many characters of a chunk's end the next chunk repeats."""

# Where a cut may fall, best first: a paragraph break, a sentence end, any whitespace.
_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"(?<=[.!?])\s+"), re.compile(r"\s+"))


def _cut(text: str, start: int, limit: int) -> int:
    """The end of the chunk that starts at ``start``: a boundary in its second half if any."""
    end = start + limit
    if end >= len(text):
        return len(text)
    floor = start + limit // 2
    for pattern in _BREAKS:
        found = [m.end() for m in pattern.finditer(text, floor, end)]
        if found:
            return found[-1]
    return end  # one unbroken run of characters: cut it where it must be cut


def chunk_text(text: str, *, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """``text`` in chunks of at most ``size`` characters, each overlapping the one before.

    Every character of ``text`` is in some chunk; chunks are stripped and never empty.

    Raises:
        ValueError: ``size`` < 2 or ``overlap`` not in ``[0, size // 2]``.
    """
    if size < 2 or not 0 <= overlap <= size // 2:
        msg = f"invalid chunking: size {size}, overlap {overlap}"
        raise ValueError(msg)
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, size)
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        # Step back by the overlap, to a word start so no chunk opens mid-word.
        back = max(end - overlap, start + 1)
        space = text.find(" ", back, end)
        start = space + 1 if 0 <= space < end - 1 else back
    return chunks

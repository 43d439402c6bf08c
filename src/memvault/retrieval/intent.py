"""What a query asks for, from its wording (pure functions, English).

An aggregation question ("how many ...", "in total", "all the ...", "which ... have I ..."),
one that asks to order events ("the order of ...", "from earliest to latest") and one about two
people or things at once ("what have X and Y both ...", "... combined") needs evidence from
several conversations, not the best-matching one alone; ranking then spreads its top results
across threads.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["asks_for_many"]

_MANY = re.compile(
    r"\bhow (many|much|often)\b|\btotal\b|\ball the\b|\bin all\b|\blist\b|\bevery\b"
    r"|\bwhat (are|were) (all|the)\b|\bwhich\b.*\b(have|did) i\b"
    # Ordering asks for every event it orders; "the order arrived" (a purchase) does not.
    r"|\bthe order of\b|\b(what|which|chronological) order\b|\b(earliest|first) to (latest|last)\b"
    r"|\b(latest|last) to (earliest|first)\b|\bboth\b|\bcombined\b|\baltogether\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def asks_for_many(query: str) -> bool:
    """True if the query asks to gather, count or order things ("how many", "in total", "all
    the", "the order of", "both")."""
    return bool(_MANY.search(query))

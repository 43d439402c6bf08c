"""EM-Graph: causal and temporal links between an agent's memories (seed 004, ScrapMem).

The entity graph links *things*; these links join *events*: when a new memory is indexed with
``graph.causal_links`` on, it is linked to the latest earlier memory of the agent (within
``causal_window_days``) that names one of its entities, as the effect of that memory when its
text states a cause or a consequence (``because``, ``so``, ``led to`` ...), else as the next
event about the same thing. A causal text naming nothing seen before ("Because of that, ...")
still refers to what just happened: it is linked to the agent's latest earlier memory in the
window. Graph recall then passes activation across the links (:func:`propagate`), so a cause
is found from its effect and the other way round: the causal distance of the ``five_signal``
preset.

Rules, not a model: cheap enough for the write path, and predictable. Links live in the graph's
side table ``graph_episode_links`` (:mod:`memvault.graph.store`), beside the memories.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from memvault.graph.models import CAUSED, PRECEDED, EpisodeLink

__all__ = ["is_causal", "link_for", "propagate"]

_CUES = re.compile(
    r"\b(because|due to|as a result|as a consequence|therefore|consequently|hence|thus|so|"
    r"caused|causing|causes|led to|leads to|lead to|resulted in|results in|result of|"
    r"thanks to|which is why|that is why|in response|after that|afterwards)\b",
    re.IGNORECASE,
)


def is_causal(text: str) -> bool:
    """True if ``text`` states a cause or a consequence (a cue word or phrase)."""
    return _CUES.search(text) is not None


def link_for(
    memory_id: str,
    at: datetime,
    text: str,
    *,
    sharing: Sequence[tuple[str, datetime]],
    latest: tuple[str, datetime] | None,
    window: timedelta,
) -> EpisodeLink | None:
    """The link of a new memory, or None.

    ``sharing``: earlier memories ``(id, at)`` naming one of its entities; ``latest``: the
    agent's latest earlier memory. Only memories at most ``window`` older count.
    """
    causal = is_causal(text)
    near = [(mid, when) for mid, when in sharing if mid != memory_id and at - window <= when < at]
    if near:
        cause, _ = max(near, key=lambda pair: (pair[1], pair[0]))
        relation = CAUSED if causal else PRECEDED
    elif causal and latest is not None and latest[0] != memory_id and at - window <= latest[1] < at:
        cause, relation = latest[0], CAUSED
    else:
        return None
    return EpisodeLink(
        cause=cause, effect=memory_id, relation=relation, weight=1.0 if causal else 0.5, at=at
    )


def propagate(
    memories: Mapping[str, float], links: Sequence[EpisodeLink], *, decay: float, limit: int
) -> dict[str, float]:
    """``memories`` (id -> activation) with one hop of activation across ``links``.

    A memory linked to an activated one gets ``activation * decay * weight`` unless it has more
    already; both directions count (a cause explains its effect, an effect follows its cause).
    The best ``limit`` come back, best first.
    """
    out = dict(memories)
    for link in links:
        for source, target in ((link.cause, link.effect), (link.effect, link.cause)):
            value = memories.get(source, 0.0) * decay * link.weight
            if value > out.get(target, 0.0):
                out[target] = value
    best = sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return dict(best)

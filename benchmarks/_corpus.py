"""A seeded generator of realistic agent memories and queries for speed benchmarks."""

from __future__ import annotations

import random

import numpy as np
from numpy.typing import NDArray

from memvault.embeddings import OnnxMiniLMEmbedder

PEOPLE = ["Priya", "Marco", "Chen", "Amara", "Lukas", "Sofia", "Kenji", "Fatima", "Diego", "Ines"]
SYSTEMS = ["billing", "auth", "search", "checkout", "ingest", "reporting", "notifications", "cache"]
TOOLS = ["PostgreSQL", "Redis", "Kafka", "Litestar", "FastAPI", "Terraform", "Kubernetes", "React"]
VERBS = ["deployed", "rolled back", "migrated", "profiled", "refactored", "reviewed", "debugged"]
ISSUES = [
    "a memory leak",
    "slow queries",
    "a race condition",
    "a flaky test",
    "timeouts",
    "OOM kills",
]
PREFS = ["dark mode", "short answers", "type hints", "small PRs", "tabs", "detailed test plans"]

TEMPLATES = [
    "{p} {v} the {s} service on Tuesday after {i} showed up in staging.",
    "The {s} team stores its data in {t}; {p} owns the schema.",
    "{p} prefers {pref} and asked for it again in the sprint {n} retro.",
    "Incident {n}: {s} had {i}; fixed by {p} with a config change in {t}.",
    "Always run the {s} migrations before deploying {t} upgrades.",
    "Customer ticket {n} reports {i} in the {s} dashboard.",
    "Decision: the {s} service moves from {t} to {t2} next quarter.",
    "{p} reviewed the {s} PR {n} and requested {pref}.",
]


def memories(n: int, seed: int = 7) -> list[str]:
    """``n`` varied, realistic memory texts."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = rng.choice(TEMPLATES)
        out.append(
            t.format(
                p=rng.choice(PEOPLE),
                v=rng.choice(VERBS),
                s=rng.choice(SYSTEMS),
                i=rng.choice(ISSUES),
                t=rng.choice(TOOLS),
                t2=rng.choice(TOOLS),
                pref=rng.choice(PREFS),
                n=rng.randint(1, 9999),
            )
        )
    return out


def queries(n: int, seed: int = 11) -> list[str]:
    """``n`` search queries an agent might ask."""
    rng = random.Random(seed)
    forms = [
        "what went wrong with the {s} service?",
        "who owns the {s} schema?",
        "what does {p} prefer?",
        "which database does {s} use?",
        "incidents involving {i}",
        "how do we deploy {t}?",
    ]
    return [
        rng.choice(forms).format(
            s=rng.choice(SYSTEMS), p=rng.choice(PEOPLE), i=rng.choice(ISSUES), t=rng.choice(TOOLS)
        )
        for _ in range(n)
    ]


def synthetic_vectors(
    real: NDArray[np.float32], count: int, rng: np.random.Generator, data: str = "noise"
) -> NDArray[np.float32]:
    """``count`` unit vectors made from the rows of ``real``, for stores too big to embed.

    ``noise``: a random real vector plus Gaussian noise (sigma 0.028; about 36 near-copies of
    each real vector at 1M: many near-ties, the hard case for a graph index). ``blend``: a real
    vector pulled 15-50% towards another real one plus light noise (sigma 0.01): nearest-
    neighbour cosines like the copies' without their clusters.
    """
    src = real[rng.integers(0, len(real), count)]
    if data == "blend":
        other = real[rng.integers(0, len(real), count)]
        pull = rng.uniform(0.15, 0.5, size=(count, 1)).astype(np.float32)
        src = (1 - pull) * src + pull * other
        noise = rng.normal(scale=0.01, size=src.shape).astype(np.float32)
    else:
        noise = rng.normal(scale=0.028, size=src.shape).astype(np.float32)
    block = src + noise
    return block / np.linalg.norm(block, axis=1, keepdims=True)


def timing_embedder() -> OnnxMiniLMEmbedder:
    """The default model without a query cache, for timed searches.

    The shared embedder answers a query it has embedded before from its LRU cache: a benchmark
    that times a second pass over the same queries (another mode, preset or index) would time
    it without the query embedding, a quarter or more of a search.
    """
    return OnnxMiniLMEmbedder(query_cache_size=0)

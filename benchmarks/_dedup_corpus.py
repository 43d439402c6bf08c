"""A seeded corpus of noisy writes with ground truth, to measure dedup and supersession.

:func:`generate_corpus` produces writes of several agents over 30 days, each one of:

``base``
    the first statement of a fact: preferences ("Prefers dark mode"), settings ("The atlas budget
    is 500"), facts about people ("Alice lives in Paris") and projects ("Project Atlas uses
    PostgreSQL for storage"), facts that never change ("Alice recommended the book Dune to Bob"),
    and episodic events (some recurring on different days: distinct events, not duplicates);
``duplicate``
    a noisy copy of the text that introduced the fact's current value, with one to three of:
    case changes, punctuation, extra spaces, filler ("FYI", "Note:", ", btw", "basically"
    inside the sentence), swapped clauses
    (for two-clause facts), a one-letter typo in a word of four letters or more (shorter words
    are left alone: one letter there usually makes another word, "in" -> "on"). No paraphrases;
``contradiction``
    a new value for a fact's slot, phrased plainly, with "now", "Update:", "moved to",
    "switched from X to Y"; about one in ten uses a phrasing the detector does not know (e.g.
    "joined Globex"), which it should miss rather than guess;
``chatter``
    conversational noise ("ok thanks"), repeated at times.

Every write carries its truth: the fact and value version it states, the index of the write that
first stated that version (``duplicate_of``), and for contradictions the index of the write that
introduced the previous version (``supersedes``).

:func:`run_corpus` replays the writes through :func:`memvault.write.pipeline.plan_write` against
an in-memory simulation of the store (neighbours: dense top-k plus lexical top-k of the same
agent and category), and :func:`evaluate_dedup` scores the decisions.

Used by ``bench_dedup.py`` (imported as the sibling module ``_dedup_corpus``, like ``_corpus``);
it measures the library, so it lives beside the benchmarks rather than in ``memvault.write``.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

import numpy as np

from memvault.models import MemoryCategory, MemoryEntry, MemoryStoreRequest
from memvault.retrieval.text import tokenize
from memvault.write.admission import AdmissionController
from memvault.write.dedup import DedupConfig, Vector
from memvault.write.pipeline import WriteDecision, WriteKind, plan_write
from memvault.write.supersession import contradiction_query

__all__ = [
    "Corpus",
    "CorpusWrite",
    "TruthKind",
    "corpus_id",
    "evaluate_dedup",
    "generate_corpus",
    "run_corpus",
]


class TruthKind(StrEnum):
    """What a corpus write is, by construction."""

    BASE = "base"
    DUPLICATE = "duplicate"
    CONTRADICTION = "contradiction"
    CHATTER = "chatter"


@dataclass(frozen=True, slots=True)
class CorpusWrite:
    """One write of the corpus and its ground truth.

    ``fact`` identifies what the write is about (unique per agent); ``version`` counts the values
    the fact had (0 for the first) and ``value`` is the one this write states. ``duplicate_of``
    is the index of the write that first stated this fact and version (None for that write
    itself); ``supersedes`` is, for a contradiction, the index of the write that first stated the
    previous version. ``noise`` names the noise operations applied.
    """

    index: int
    agent_id: str
    category: MemoryCategory
    content: str
    created_at: datetime
    kind: TruthKind
    fact: str
    version: int
    value: str = ""
    duplicate_of: int | None = None
    supersedes: int | None = None
    noise: tuple[str, ...] = ()

    def request(self) -> MemoryStoreRequest:
        """The store request of this write."""
        return MemoryStoreRequest(
            content=self.content, category=self.category, created_at=self.created_at
        )


@dataclass(frozen=True, slots=True)
class Corpus:
    """The writes of a generated corpus, in time order, and the seed that produced them."""

    writes: tuple[CorpusWrite, ...]
    seed: int

    def __len__(self) -> int:
        """Number of writes."""
        return len(self.writes)

    def counts(self) -> dict[str, int]:
        """Number of writes of each :class:`TruthKind`."""
        out = {k.value: 0 for k in TruthKind}
        for w in self.writes:
            out[w.kind.value] += 1
        return out


def corpus_id(index: int) -> str:
    """The entry id :func:`run_corpus` gives the entry stored for write ``index``."""
    return f"w{index:06d}"


# -- vocabulary ----------------------------------------------------------------------------------

_PEOPLE = """
Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil
Trent Victor Walter Yasmin Zoe Aaron Bianca Chen Dmitri Elena Farid Gustavo Hana Igor Jonas
Kenji Leila Marco Nadia Oscar Priya Quentin Rosa Samir Tomas Uma Valeria Wanda Xavier Yusuf
Zara Anika Bruno Celine Diego Emeka Fatima Goran Helga Ingrid Jamal Kaito Lucia Mateo Noor
""".split()
_CITIES = """
Paris Berlin Lisbon Madrid Rome Vienna Prague Warsaw Oslo Dublin Amsterdam Brussels Zurich
Munich Milan Barcelona Porto Seville Lyon Marseille Hamburg Copenhagen Stockholm Helsinki
Athens Budapest Krakow Tallinn Riga Vilnius Toronto Montreal Boston Denver Austin Seattle
Chicago Portland Melbourne Auckland
""".split()
_COMPANIES = [
    "Acme",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Stark Industries",
    "Wayne Enterprises",
    "Cyberdyne",
    "Soylent",
    "Vandelay Industries",
    "Pied Piper",
    "Aperture Science",
    "Tyrell Corp",
    "Wonka Industries",
    "Gringotts",
    "Monarch Solutions",
    "Nakatomi Trading",
    "Oscorp",
    "Massive Dynamic",
    "Blue Sun",
    "Dunder Mifflin",
    "Prestige Worldwide",
    "Sterling Cooper",
    "Bluth Company",
    "Krusty Krab",
    "Virtucon",
    "Gekko Capital",
    "Ollivanders",
    "Nimbus Data",
    "Halcyon Health",
]
_ROLES = [
    "designer",
    "data scientist",
    "product manager",
    "nurse",
    "teacher",
    "backend engineer",
    "frontend engineer",
    "accountant",
    "site reliability engineer",
    "researcher",
    "sales lead",
    "architect",
    "chef",
    "journalist",
    "lawyer",
    "pharmacist",
]
_FAVOURITES = {
    "color": ["blue", "green", "red", "purple", "orange", "yellow", "teal", "black"],
    "food": ["pizza", "sushi", "ramen", "tacos", "curry", "paella", "pho", "lasagna"],
    "sport": ["tennis", "football", "climbing", "cycling", "swimming", "rowing", "chess"],
    "drink": ["espresso", "green tea", "lemonade", "hot chocolate", "kombucha", "mint tea"],
}
_RELATIONSHIP = ["single", "married", "engaged"]
_MODES = ["dark mode", "light mode", "high contrast mode", "sepia mode"]
_INDENT = ["tabs", "spaces"]
_EDITORS = ["vim", "emacs", "neovim", "helix", "VS Code", "Sublime Text", "nano", "Zed"]
_ANSWERS = ["short answers", "detailed answers", "bullet point answers"]
_SEATS = ["window seat", "aisle seat"]
_PROJECTS = """
Atlas Borealis Cobalt Dynamo Ember Falcon Granite Helios Iris Juniper Kestrel Lumen Meridian
Nimbus Onyx Phoenix Quasar Raven Sierra Titan Umbra Vega Willow Xenon Yarrow Zephyr
""".split()
_TECH = {
    "storage": ["PostgreSQL", "MySQL", "SQLite", "MongoDB", "DynamoDB", "CockroachDB"],
    "caching": ["Redis", "Memcached", "Varnish", "Hazelcast"],
    "messaging": ["Kafka", "RabbitMQ", "NATS", "Pulsar"],
    "CI": ["GitHub Actions", "GitLab CI", "Jenkins", "CircleCI", "Buildkite"],
}
_STATUSES = ["active", "on hold", "paused", "blocked", "completed", "cancelled", "in progress"]
_BOOKS = """
Dune Emma Beloved Ulysses Middlemarch Persuasion Rebecca Solaris Hyperion Neuromancer
Foundation Ubik Frankenstein Dracula Kindred Stoner Possession Atonement
""".split()
_PETS = ["dog", "cat", "parrot", "rabbit", "tortoise", "ferret"]
_PET_NAMES = "Rex Luna Milo Bella Oreo Pixel Nova Biscuit Pepper Ziggy Mochi Waffles".split()
_EVENTS = ["conference", "hackathon", "meetup", "workshop", "wedding", "book club"]
_SERVICES = """
billing auth search checkout payments inventory gateway notifications reporting ledger
scheduler indexer
""".split()
_TOPICS = ["database", "auth", "billing", "logging", "frontend", "queue", "payments"]
_PLACES = ["river", "canal", "harbour", "park", "lake", "old town", "beach"]
_CHATTER = [
    "ok thanks",
    "sounds good",
    "lol",
    "great, thanks!",
    "hmm, let me think",
    "sure",
    "no worries",
    "got it",
    "perfect",
    "thank you so much",
    "ok",
    "nice one",
    "haha yes",
    "cool cool",
]

_FILLER_PREFIXES = [
    "FYI ",
    "fyi: ",
    "Note: ",
    "note - ",
    "btw, ",
    "BTW ",
    "Reminder: ",
    "Just so you know, ",
    "For the record, ",
]
_FILLER_SUFFIXES = [", fyi", " (fyi)", " btw", ", just so you know", " - for the record"]
_FILLER_INSIDE = [", fyi, ", " btw ", " basically ", " honestly ", " (fyi) "]


# -- facts ---------------------------------------------------------------------------------------

Render = Callable[[str], str]


@dataclass(slots=True)
class _Fact:
    """A fact to narrate: how to state its first value and how to change it."""

    key: str
    category: MemoryCategory
    values: list[str]
    state: Render
    changes: list[Render] = field(default_factory=list)
    change_from: Callable[[str, str], str] | None = None
    unknown_change: Render | None = None
    clauses: tuple[str, str] | None = None
    mutable: bool = True
    episodic: bool = False


def _person_facts(rng: random.Random, person: str) -> list[_Fact]:
    p = person
    facts = [
        _Fact(
            f"{p}/residence",
            MemoryCategory.SOCIAL,
            _CITIES,
            lambda v: f"{p} lives in {v}",
            [
                lambda v: f"{p} moved to {v}",
                lambda v: f"{p} now lives in {v}",
                lambda v: f"Update: {p} lives in {v} now",
            ],
            lambda old, new: f"{p} moved from {old} to {new}",
            lambda v: f"{p} relocated and is settling into {v}",
        ),
        _Fact(
            f"{p}/employer",
            MemoryCategory.SOCIAL,
            _COMPANIES,
            lambda v: f"{p} works at {v}",
            [lambda v: f"{p} now works at {v}", lambda v: f"Update: {p} works for {v}"],
            None,
            lambda v: f"{p} joined {v} last month",
        ),
        _Fact(
            f"{p}/role",
            MemoryCategory.SOCIAL,
            _ROLES,
            lambda v: f"{p} works as a {v}",
            [lambda v: f"{p} now works as a {v}"],
            None,
            lambda v: f"{p} got promoted and is a {v}",
        ),
        _Fact(
            f"{p}/relationship",
            MemoryCategory.SOCIAL,
            _RELATIONSHIP,
            lambda v: f"{p} is {v}",
            [lambda v: f"{p} is now {v}"],
        ),
    ]
    thing = rng.choice(sorted(_FAVOURITES))
    facts.append(
        _Fact(
            f"{p}/favorite-{thing}",
            MemoryCategory.SOCIAL,
            _FAVOURITES[thing],
            lambda v: f"{p}'s favorite {thing} is {v}",
            [
                lambda v: f"{p}'s favorite {thing} is now {v}",
                lambda v: f"{p}'s favourite {thing} changed to {v}",
            ],
        )
    )
    other = rng.choice([q for q in _PEOPLE if q != p])
    book = rng.choice(_BOOKS)
    facts.append(
        _Fact(
            f"{p}/book-{book}-{other}",
            MemoryCategory.SOCIAL,
            [book],
            lambda v: f"{p} recommended the book {v} to {other}",
            mutable=False,
        )
    )
    pet, pet_name = rng.choice(_PETS), rng.choice(_PET_NAMES)
    facts.append(
        _Fact(
            f"{p}/pet-{pet}-{pet_name}",
            MemoryCategory.SOCIAL,
            [pet_name],
            lambda v: f"{p} adopted a {pet} named {v}",
            mutable=False,
        )
    )
    event, city = rng.choice(_EVENTS), rng.choice(_CITIES)
    first = f"{p} met {other} at the {event} in {city}"
    second = f"{other} introduced {p} to the {rng.choice(_TOPICS)} team"
    facts.append(
        _Fact(
            f"{p}/met-{other}-{event}",
            MemoryCategory.SOCIAL,
            [first],
            lambda v: f"{v} and {second}",
            clauses=(first, second),
            mutable=False,
        )
    )
    return facts


def _user_facts(subject: str) -> list[_Fact]:
    """Preferences of the user (implicit subject) or of a named person."""
    s = f"{subject} " if subject else ""
    now = f"{subject} now " if subject else "Now "
    key = subject or "user"

    def cap(text: str) -> str:
        return text if subject else text[0].upper() + text[1:]

    return [
        _Fact(
            f"{key}/mode",
            MemoryCategory.SEMANTIC,
            _MODES,
            lambda v: cap(f"{s}prefers {v}"),
            [lambda v: f"{now}prefers {v}", lambda v: cap(f"Update: {s}prefers {v}")],
        ),
        _Fact(
            f"{key}/indentation",
            MemoryCategory.SEMANTIC,
            _INDENT,
            lambda v: cap(f"{s}prefers {v} for indentation"),
            [lambda v: f"{now}prefers {v} for indentation"],
            lambda old, new: cap(f"{s}switched from {old} to {new} for indentation"),
        ),
        _Fact(
            f"{key}/editor",
            MemoryCategory.SEMANTIC,
            _EDITORS,
            lambda v: cap(f"{s}uses {v} for editing"),
            [lambda v: f"{now}uses {v} for editing"],
            lambda old, new: cap(f"{s}switched from {old} to {new} for editing"),
            lambda v: cap(f"{s}gave {v} a try for editing and kept it"),
        ),
        _Fact(
            f"{key}/answers",
            MemoryCategory.SEMANTIC,
            _ANSWERS,
            lambda v: cap(f"{s}prefers {v}"),
            [lambda v: f"{now}prefers {v}"],
        ),
        _Fact(
            f"{key}/seat",
            MemoryCategory.SEMANTIC,
            _SEATS,
            lambda v: cap(f"{s}prefers a {v} on flights"),
            [lambda v: f"{now}prefers a {v} on flights"],
        ),
    ]


def _project_facts(rng: random.Random, project: str) -> list[_Fact]:
    name = f"Project {project}"
    low = project.lower()
    facts = [
        _Fact(
            f"{project}/status",
            MemoryCategory.SEMANTIC,
            _STATUSES,
            lambda v: f"{name} is {v}",
            [lambda v: f"{name} is now {v}", lambda v: f"Update: {name} is {v}"],
            None,
            lambda v: f"{name} has been moved to the {v} column on the board",
        ),
        _Fact(
            f"{project}/budget",
            MemoryCategory.SEMANTIC,
            [str(100 * n) for n in range(5, 60)],
            lambda v: f"The {low} budget is {v}",
            [
                lambda v: f"The {low} budget is now {v}",
                lambda v: f"{project} budget: {v}",
                lambda v: f"Update: the {low} budget changed to {v}",
            ],
        ),
        _Fact(
            f"{project}/timeout",
            MemoryCategory.SEMANTIC,
            [str(n) for n in (5, 10, 15, 20, 30, 45, 60, 90, 120)],
            lambda v: f"The {low} request timeout is {v} seconds",
            [lambda v: f"The {low} request timeout is now {v} seconds"],
        ),
        _Fact(
            f"{project}/deadline",
            MemoryCategory.SEMANTIC,
            [f"{m} {d}" for m in ("March", "April", "June", "October") for d in (3, 14, 21, 28)],
            lambda v: f"The {low} deadline is {v}",
            [lambda v: f"The {low} deadline is now {v}", lambda v: f"{project} deadline: {v}"],
        ),
    ]
    purpose = rng.choice(sorted(_TECH))
    facts.append(
        _Fact(
            f"{project}/tech-{purpose}",
            MemoryCategory.SEMANTIC,
            _TECH[purpose],
            lambda v: f"{name} uses {v} for {purpose}",
            [lambda v: f"{name} now uses {v} for {purpose}"],
            lambda old, new: f"{name} switched from {old} to {new} for {purpose}",
            lambda v: f"{name} dropped its old tool and went all in on {v} for {purpose}",
        )
    )
    service = rng.choice(_SERVICES)
    facts.append(
        _Fact(
            f"{project}/logs-{service}",
            MemoryCategory.SEMANTIC,
            [service],
            lambda v: f"The {v} service of {name} writes logs to /var/log/{low}/{v}.log",
            mutable=False,
        )
    )
    size = rng.choice([20, 25, 50, 100, 200])
    facts.append(
        _Fact(
            f"{project}/page-{service}-{size}",
            MemoryCategory.SEMANTIC,
            [str(size)],
            lambda v: f"The {service} API of {name} returns pages of {v} items",
            mutable=False,
        )
    )
    reviewer, approver = rng.sample(_PEOPLE, 2)
    first = f"{reviewer} reviewed the {service} design for {name}"
    second = f"{approver} approved the rollout"
    facts.append(
        _Fact(
            f"{project}/review-{reviewer}-{approver}",
            MemoryCategory.SEMANTIC,
            [first],
            lambda v: f"{v} and {second}",
            clauses=(first, second),
            mutable=False,
        )
    )
    return facts


def _episodes(rng: random.Random, agent: str, count: int) -> list[_Fact]:
    facts: list[_Fact] = []
    for i in range(count):
        kind = rng.randrange(3)
        if kind == 0:
            service = rng.choice(_SERVICES)
            version = f"v{rng.randrange(1, 9)}.{rng.randrange(0, 20)}"
            text = f"Deployed {service} {version} to production"
        elif kind == 1:
            text = (
                f"Had a call with {rng.choice(_PEOPLE)} about the {rng.choice(_TOPICS)} migration"
            )
        else:
            # Recurring on purpose: the same text on another day is another event.
            text = f"Went for a run along the {rng.choice(_PLACES)}"
        facts.append(
            _Fact(
                f"episode-{i}",
                MemoryCategory.EPISODIC,
                [text],
                lambda v: v,
                mutable=False,
                episodic=True,
            )
        )
    return facts


# -- noise ---------------------------------------------------------------------------------------


def _typo(text: str, rng: random.Random) -> str | None:
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not spots:
        return None
    i = rng.choice(spots)
    w = words[i]
    j = rng.randrange(len(w))
    op = rng.randrange(4)
    letters = "abcdefghijklmnopqrstuvwxyz"
    if op == 0:
        new = w[:j] + rng.choice([c for c in letters if c != w[j].lower()]) + w[j + 1 :]
    elif op == 1:
        new = w[:j] + w[j + 1 :]
    elif op == 2:
        new = w[:j] + rng.choice(letters) + w[j:]
    else:
        j = min(j, len(w) - 2)
        if w[j] == w[j + 1]:
            return None
        new = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    words[i] = new
    return " ".join(words)


def _case(text: str, rng: random.Random) -> str:
    op = rng.randrange(4)
    if op == 0:
        return text.lower()
    if op == 1:
        return text.upper()
    if op == 2:
        return " ".join(w[:1].upper() + w[1:] for w in text.split(" "))
    return text[:1].swapcase() + text[1:]


def _punct(text: str, rng: random.Random) -> str:
    op = rng.randrange(5)
    body = text.rstrip(".!")
    if op == 0:
        return body + "."
    if op == 1:
        return body + "!"
    if op == 2:
        return body + "!!"
    if op == 3:
        return body + "..."
    head, _, tail = body.partition(" ")
    return f"{head}, {tail}" if tail else body + "."


def _spaces(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    if len(words) > 1:
        i = rng.randrange(len(words) - 1)
        words[i] += " " * rng.randrange(1, 3)
    out = " ".join(words)
    return ("  " + out + " ") if rng.random() < 0.5 else (out + "\t")


def _filler(text: str, rng: random.Random) -> str:
    draw = rng.random()
    if draw < 0.5:
        return rng.choice(_FILLER_PREFIXES) + text
    if draw < 0.8:
        return text.rstrip(".!") + rng.choice(_FILLER_SUFFIXES)
    # Inside the sentence, after its first word: "Alice, fyi, lives in Paris".
    head, _, tail = text.partition(" ")
    return f"{head}{rng.choice(_FILLER_INSIDE)}{tail}" if tail else text


def _noisy(
    text: str, clauses: tuple[str, str] | None, rng: random.Random
) -> tuple[str, tuple[str, ...]]:
    ops = ["case", "punctuation", "spaces", "filler", "typo"]
    if clauses is not None:
        ops.append("reorder")
    chosen = rng.sample(ops, rng.randint(1, 3))
    applied: list[str] = []
    # Fixed order: structure first, surface last, so each op sees a well-formed text.
    if "reorder" in chosen and clauses is not None:
        text = f"{clauses[1]} and {clauses[0]}"
        applied.append("reorder")
    if "typo" in chosen:
        typo = _typo(text, rng)
        if typo is not None:
            text = typo
            applied.append("typo")
    for name, op in (("filler", _filler), ("case", _case), ("punctuation", _punct)):
        if name in chosen:
            text = op(text, rng)
            applied.append(name)
    if "spaces" in chosen or not applied:
        text = _spaces(text, rng)
        applied.append("spaces")
    return text, tuple(applied)


# -- generation ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Event:
    at: datetime
    agent: str
    fact: _Fact
    kind: TruthKind
    version: int
    value: str
    content: str
    noise: tuple[str, ...]


def _poisson(rng: random.Random, lam: float) -> int:
    # Knuth's method: small lambdas only.
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _narrate(
    fact: _Fact,
    agent: str,
    rng: random.Random,
    start: datetime,
    dup_rate: float,
    change_prob: float,
) -> list[_Event]:
    events: list[_Event] = []
    at = start
    value = rng.choice(fact.values)
    text = fact.state(value)
    events.append(_Event(at, agent, fact, TruthKind.BASE, 0, value, text, ()))
    versions = 0
    if fact.mutable and len(fact.values) > 1:
        while versions < 3 and rng.random() < change_prob:
            versions += 1
    for version in range(versions + 1):
        if version > 0:
            at += timedelta(hours=rng.expovariate(1 / 60))
            new_value = rng.choice([v for v in fact.values if v != value])
            draw = rng.random()
            if fact.unknown_change is not None and draw < 0.1:
                text = fact.unknown_change(new_value)
            elif fact.change_from is not None and draw < 0.35:
                text = fact.change_from(value, new_value)
            elif fact.changes:
                text = rng.choice(fact.changes)(new_value)
            else:
                text = fact.state(new_value)
            value = new_value
            noise: tuple[str, ...] = ()
            content = text
            if rng.random() < 0.25:
                content, noise = _noisy(text, None, rng)
                if "typo" in noise:
                    content, noise = text, ()  # a new value arrives without a typo in it
            events.append(
                _Event(at, agent, fact, TruthKind.CONTRADICTION, version, value, content, noise)
            )
        for _ in range(_poisson(rng, dup_rate)):
            gap = rng.expovariate(1 / 2) if fact.episodic else rng.expovariate(1 / 14)
            at += timedelta(hours=min(gap, 6.0) if fact.episodic else gap)
            clauses = fact.clauses if version == 0 else None
            content, noise = _noisy(text, clauses, rng)
            events.append(
                _Event(at, agent, fact, TruthKind.DUPLICATE, version, value, content, noise)
            )
    return events


def generate_corpus(
    n_writes: int = 10_000,
    *,
    seed: int = 0,
    agents: int | None = None,
    duplicate_rate: float = 1.2,
    change_probability: float = 0.55,
    chatter_share: float = 0.04,
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    days: int = 30,
) -> Corpus:
    """Generate ``n_writes`` noisy writes with ground truth, deterministically from ``seed``.

    ``agents`` defaults to one per 400 writes. ``duplicate_rate`` is the mean number of noisy
    copies after each value of a fact; ``change_probability`` the chance that a mutable fact
    changes value (again, up to three times); ``chatter_share`` the share of chatter writes.
    Writes are in time order over ``days`` days from ``start``.
    """
    if n_writes < 1:
        msg = "n_writes must be >= 1"
        raise ValueError(msg)
    rng = random.Random(seed)
    n_agents = agents if agents is not None else max(1, math.ceil(n_writes / 400))
    span = timedelta(days=days).total_seconds()
    events: list[_Event] = []
    target = int(n_writes * 1.25) + 20
    agent_ids = [f"agent-{i:02d}" for i in range(n_agents)]
    pools: dict[str, list[_Fact]] = {a: [] for a in agent_ids}
    for agent in agent_ids:
        people = rng.sample(_PEOPLE, 12)
        projects = rng.sample(_PROJECTS, 5)
        pool: list[_Fact] = _user_facts("")
        for person in people:
            pool.extend(_person_facts(rng, person))
        for person in people[:3]:
            pool.extend(_user_facts(person))
        for project in projects:
            pool.extend(_project_facts(rng, project))
        pool.extend(_episodes(rng, agent, 40))
        rng.shuffle(pool)
        pools[agent] = pool
    chatter_events = int(target * chatter_share)
    fact_events = target - chatter_events
    cursor = {a: 0 for a in agent_ids}
    produced = 0
    seen_text: dict[str, set[str]] = defaultdict(set)
    episode_starts: dict[tuple[str, str], list[datetime]] = defaultdict(list)
    while produced < fact_events:
        agent = rng.choice(agent_ids)
        pool = pools[agent]
        if cursor[agent] >= len(pool):
            if all(cursor[a] >= len(pools[a]) for a in agent_ids):
                break
            continue
        fact = pool[cursor[agent]]
        cursor[agent] += 1
        t0 = start + timedelta(seconds=rng.random() * span)
        if fact.episodic:
            # A recurring event happens on another day: keep same-text events two days apart
            # so the truth ("another event, not a duplicate") is unambiguous.
            earlier = episode_starts[(agent, fact.values[0])]
            for _ in range(20):
                if all(abs(t0 - t) >= timedelta(days=2) for t in earlier):
                    break
                t0 = start + timedelta(seconds=rng.random() * span)
            else:
                continue
            earlier.append(t0)
        narrated = _narrate(fact, agent, rng, t0, duplicate_rate, change_probability)
        if not fact.episodic and narrated[0].content in seen_text[agent]:
            continue  # two facts of one agent must not start with the same sentence
        seen_text[agent].add(narrated[0].content)
        events.extend(narrated)
        produced += len(narrated)
    for i in range(chatter_events):
        agent = rng.choice(agent_ids)
        phrase = rng.choice(_CHATTER)
        fact = _Fact(f"chatter/{phrase}", MemoryCategory.EPISODIC, [phrase], lambda v: v)
        at = start + timedelta(seconds=rng.random() * span)
        content = phrase if rng.random() < 0.5 else _noisy(phrase, None, rng)[0]
        events.append(
            _Event(at, agent, fact, TruthKind.CHATTER, 0, phrase, content, (f"chatter-{i}",))
        )
    events.sort(key=lambda e: (e.at, e.agent, e.fact.key, e.version, e.kind != TruthKind.BASE))
    return Corpus(_truth(events[:n_writes]), seed)


def _truth(events: Sequence[_Event]) -> tuple[CorpusWrite, ...]:
    first: dict[tuple[str, str, int], int] = {}
    writes: list[CorpusWrite] = []
    for index, e in enumerate(events):
        key = (e.agent, e.fact.key, e.version)
        dup_of = first.get(key)
        kind = e.kind
        if dup_of is None:
            first[key] = index
            if kind is TruthKind.DUPLICATE:
                kind = TruthKind.BASE  # cannot happen with time-ordered narration; kept safe
        elif kind is TruthKind.CHATTER:
            pass
        else:
            kind = TruthKind.DUPLICATE
        supersedes = None
        if kind is TruthKind.CONTRADICTION:
            supersedes = first.get((e.agent, e.fact.key, e.version - 1))
        writes.append(
            CorpusWrite(
                index=index,
                agent_id=e.agent,
                category=e.fact.category,
                content=e.content,
                created_at=e.at,
                kind=kind,
                fact=f"{e.agent}/{e.fact.key}",
                version=e.version,
                value=e.value,
                duplicate_of=dup_of,
                supersedes=supersedes,
                noise=e.noise,
            )
        )
    return tuple(writes)


# -- replay --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Group:
    """Live entries of one (agent, category) of the simulated store, with a tiny search index."""

    ids: list[str] = field(default_factory=list)
    entries: dict[str, MemoryEntry] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    terms: dict[str, frozenset[str]] = field(default_factory=dict)
    postings: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    matrix: np.ndarray | None = None

    def add(self, entry: MemoryEntry, vector: np.ndarray) -> None:
        self.ids.append(entry.id)
        self.entries[entry.id] = entry
        self.vectors[entry.id] = vector
        terms = frozenset(tokenize(entry.content))
        self.terms[entry.id] = terms
        for t in terms:
            self.postings[t].add(entry.id)
        self.matrix = None

    def remove(self, entry_id: str) -> None:
        if entry_id not in self.entries:
            return
        self.ids.remove(entry_id)
        del self.entries[entry_id], self.vectors[entry_id]
        for t in self.terms.pop(entry_id):
            self.postings[t].discard(entry_id)
        self.matrix = None

    def dense(self, vector: np.ndarray, k: int) -> list[str]:
        if not self.ids or k <= 0:
            return []
        if self.matrix is None:
            self.matrix = np.vstack([self.vectors[i] for i in self.ids])
        sims = self.matrix @ vector
        return [self.ids[int(i)] for i in np.argsort(-sims, kind="stable")[:k]]

    def lexical(self, text: str, k: int) -> list[str]:
        # Shared terms weighted by inverse document frequency: a rare name outranks "lives".
        n = len(self.ids)
        scores: dict[str, float] = defaultdict(float)
        for t in set(tokenize(text)):
            posting = self.postings.get(t)
            if posting:
                idf = math.log(1.0 + n / len(posting))
                for entry_id in posting:
                    scores[entry_id] += idf
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return [entry_id for entry_id, _ in ranked[:k]]


def _unit(vector: Vector) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def run_corpus(
    corpus: Corpus | Sequence[CorpusWrite],
    vectors: Sequence[Vector] | np.ndarray,
    *,
    dedup: DedupConfig | None = None,
    admission: AdmissionController | None = None,
    k: int = 10,
    lexical_k: int = 10,
) -> list[WriteDecision]:
    """Replay ``corpus`` through :func:`plan_write` against a simulated store; one decision each.

    ``vectors[i]`` is the embedding of write ``i``. The entry stored for write ``i`` gets id
    :func:`corpus_id` ``(i)``. Neighbours of a write are the ``k`` live entries of the same
    agent and category with the highest cosine plus the ``lexical_k`` with the highest sum of
    IDF weights of shared terms (what a store's dense and BM25 search would return), plus the
    ``lexical_k`` best for :func:`~memvault.write.supersession.contradiction_query` when the
    write is a statement. A NOOP bumps the duplicate's access count; a SUPERSEDE closes the old
    entry.
    """
    writes = corpus.writes if isinstance(corpus, Corpus) else tuple(corpus)
    if len(vectors) != len(writes):
        msg = f"{len(vectors)} vectors for {len(writes)} writes"
        raise ValueError(msg)
    cfg = dedup or DedupConfig()
    groups: dict[tuple[str, MemoryCategory], _Group] = defaultdict(_Group)
    where: dict[str, _Group] = {}
    decisions: list[WriteDecision] = []
    for write, raw in zip(writes, vectors, strict=True):
        vec = _unit(raw)
        group = groups[(write.agent_id, write.category)]
        found = [*group.dense(vec, k), *group.lexical(write.content, lexical_k)]
        query = contradiction_query(write.content)
        if query is not None:
            found.extend(group.lexical(query, lexical_k))
        picked = dict.fromkeys(found)
        neighbours = [(group.entries[i], group.vectors[i]) for i in picked]
        decision = plan_write(
            write.request(),
            vec,
            neighbours=neighbours,
            admission=admission,
            dedup=cfg,
            now=write.created_at,
            agent_id=write.agent_id,
        )
        decisions.append(decision)
        if decision.kind is WriteKind.NOOP and decision.duplicate_of in where:
            owner = where[decision.duplicate_of]
            old = owner.entries[decision.duplicate_of]
            owner.entries[old.id] = old.model_copy(
                update={"access_count": old.access_count + 1, "last_accessed_at": write.created_at}
            )
        if decision.kind is WriteKind.SUPERSEDE and decision.old_id in where:
            # Superseded entries leave the live set that neighbours come from.
            where.pop(decision.old_id).remove(decision.old_id)
        if decision.kind in (WriteKind.ADD, WriteKind.SUPERSEDE) and decision.outdated_by is None:
            entry = MemoryEntry(
                id=corpus_id(write.index),
                agent_id=write.agent_id,
                category=write.category,
                content=write.content,
                created_at=write.created_at,
                updated_at=write.created_at,
            )
            group.add(entry, vec)
            where[entry.id] = group
    return decisions


# -- evaluation ----------------------------------------------------------------------------------


def evaluate_dedup(
    decisions: Sequence[WriteDecision],
    truth: Corpus | Sequence[CorpusWrite],
    *,
    ids: Sequence[str | None] | None = None,
) -> dict[str, float]:
    """Score write decisions against the corpus truth.

    ``ids[i]`` is the id the entry of write ``i`` got (default :func:`corpus_id`); decisions
    name entries by these ids. Returned figures (percentages in 0-100):

    * ``duplicate_writes_missed_pct``: duplicate writes stored as new entries, of all
      duplicate writes;
    * ``duplicates_left_pct``: at the end, live entries that repeat another live entry of the
      same fact and value, of all live fact entries (the "duplicates left" target; chatter is
      counted apart in ``live_chatter``: repeats days apart are separate episodic events);
    * ``contradictions_resolved_pct``: contradictions that superseded an entry of the same fact
      holding an older value, of all contradictions;
    * ``stale_left``: live entries at the end whose value is not the latest live value of their
      fact (a missed contradiction);
    * ``false_supersessions``: supersessions of an entry of another fact (a true memory hidden);
    * ``false_noops``: NOOPs onto an entry of another fact or value (information lost; a revert
      to a value an entry still holds is no loss);
    * ``rejected_chatter`` / ``rejected_facts``: admission rejections by truth kind.
    """
    writes = truth.writes if isinstance(truth, Corpus) else tuple(truth)
    if len(decisions) != len(writes):
        msg = f"{len(decisions)} decisions for {len(writes)} writes"
        raise ValueError(msg)
    id_list = list(ids) if ids is not None else [corpus_id(w.index) for w in writes]
    owner = {entry_id: i for i, entry_id in enumerate(id_list) if entry_id is not None}
    counts = {k: 0 for k in TruthKind}
    live: dict[int, None] = {}
    missed = caught = resolved = false_super = false_noop = 0
    rejected_chatter = rejected_facts = 0
    kinds = {k: 0 for k in WriteKind}
    for i, (write, decision) in enumerate(zip(writes, decisions, strict=True)):
        counts[write.kind] += 1
        kinds[decision.kind] += 1
        if decision.kind is WriteKind.REJECT:
            if write.kind is TruthKind.CHATTER:
                rejected_chatter += 1
            else:
                rejected_facts += 1
            continue
        if decision.kind is WriteKind.NOOP:
            target = owner.get(decision.duplicate_of or "")
            # Same fact and value: a revert to a value that is still live is no loss either.
            same = target is not None and (
                writes[target].fact == write.fact and writes[target].value == write.value
            )
            if same and write.kind is TruthKind.DUPLICATE:
                caught += 1
            if not same:
                false_noop += 1
            continue
        # ADD or SUPERSEDE: a new entry.
        if write.kind is TruthKind.DUPLICATE:
            missed += 1
        if decision.kind is WriteKind.SUPERSEDE:
            old = owner.get(decision.old_id or "")
            if old is not None:
                live.pop(old, None)
                if writes[old].fact != write.fact:
                    false_super += 1
                elif write.kind is TruthKind.CONTRADICTION and writes[old].version < write.version:
                    resolved += 1
        if decision.outdated_by is None:
            live[i] = None
    latest: dict[str, tuple[int, str]] = {}
    groups: dict[tuple[str, str], int] = defaultdict(int)
    facts = [i for i in live if writes[i].kind is not TruthKind.CHATTER]
    # Chatter is admission's business; its repeats days apart are separate episodic events.
    chatter_live = len(live) - len(facts)
    for i in facts:
        w = writes[i]
        latest[w.fact] = max(latest.get(w.fact, (-1, "")), (w.version, w.value))
        groups[(w.fact, w.value)] += 1
    dup_left = sum(n - 1 for n in groups.values())
    stale = sum(1 for i in facts if writes[i].value != latest[writes[i].fact][1])
    n_live = len(live) - chatter_live
    dups = counts[TruthKind.DUPLICATE]
    contras = counts[TruthKind.CONTRADICTION]

    def pct(a: int, b: int) -> float:
        return round(100.0 * a / b, 3) if b else 0.0

    return {
        "writes": float(len(writes)),
        "base": float(counts[TruthKind.BASE]),
        "duplicates": float(dups),
        "contradictions": float(contras),
        "chatter": float(counts[TruthKind.CHATTER]),
        "added": float(kinds[WriteKind.ADD]),
        "noops": float(kinds[WriteKind.NOOP]),
        "supersessions": float(kinds[WriteKind.SUPERSEDE]),
        "rejected": float(kinds[WriteKind.REJECT]),
        "duplicates_caught": float(caught),
        "duplicate_writes_missed": float(missed),
        "duplicate_writes_missed_pct": pct(missed, dups),
        "live_entries": float(n_live),
        "live_chatter": float(chatter_live),
        "duplicates_left": float(dup_left),
        "duplicates_left_pct": pct(dup_left, n_live),
        "contradictions_resolved": float(resolved),
        "contradictions_resolved_pct": pct(resolved, contras),
        "stale_left": float(stale),
        "false_supersessions": float(false_super),
        "false_supersession_pct": pct(false_super, len(writes)),
        "false_noops": float(false_noop),
        "false_noop_pct": pct(false_noop, len(writes)),
        "rejected_chatter": float(rejected_chatter),
        "rejected_facts": float(rejected_facts),
    }

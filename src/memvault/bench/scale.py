"""``memvault bench scale``: write and search speed at several store sizes, optionally A/B.

For each size a fresh store is filled with ``add_many`` (memories/s, embedding included; dedup
off unless ``ingest_dedup``: its neighbour checks make a big load several times slower), then
``queries`` unique searches run with the default preset (query embedding included: no query
repeats, so the embedder's query cache never answers) for p50/p95/p99, then a few hundred single
``add`` calls with dedup on; the worker reports its peak RSS and the store's size on disk.

Every measurement runs in a worker process (:mod:`memvault.bench._scale_worker`) that imports
the build under test through ``PYTHONPATH``. With ``compare=REF`` a second worker runs the
build of a git worktree of REF with the same interpreter, and the driver interleaves the two
chunk by chunk within every step (a slice of the ingest, 25 searches, 25 adds; the order flips
every chunk: A B B A ...) so that the machine's load falls on both alike; the report then
carries this/ref ratios, which mean something on a shared machine where absolute times are noise.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rich import box
from rich.table import Table

from memvault.bench.metrics import percentile
from memvault.errors import MemoryError, MemoryValidationError

__all__ = [
    "DEFAULT_SIZES",
    "METRICS",
    "ScaleError",
    "ScaleOptions",
    "StepProgress",
    "build_corpus",
    "parse_backend",
    "parse_sizes",
    "render_scale",
    "run_scale",
]

DEFAULT_SIZES = (1_000, 10_000)

StepProgress = Callable[[str, int, int], None]
"""Called with ``(step label, done, total)`` while a step runs."""

METRICS: tuple[tuple[str, str, bool], ...] = (
    # (key, column title, higher is better)
    ("add_many_per_s", "add_many /s", True),
    ("search_p50_ms", "p50 ms", False),
    ("search_p95_ms", "p95 ms", False),
    ("search_p99_ms", "p99 ms", False),
    ("add_dedup_per_s", "add /s", True),
    ("peak_rss_mib", "RSS MiB", False),
    ("store_mib", "disk MiB", False),
)

_WORKER = Path(__file__).with_name("_scale_worker.py")


class ScaleError(MemoryError):
    """The benchmark could not run (a worker failed, git refused); the CLI exits 2."""


@dataclass(frozen=True)
class ScaleOptions:
    """What ``memvault bench scale`` measures."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    backend: str = "sqlite"
    """``sqlite`` (a temporary file per size), ``memory`` or a ``postgresql://`` URL."""
    queries: int = 200
    adds: int = 200
    corpus: str = "synthetic"
    """``synthetic`` or the path of a LoCoMo / LongMemEval file (its turns and questions)."""
    compare: str | None = None
    """A git ref whose build runs side by side with this one."""
    ingest_dedup: bool = False
    """Ingest with write-time dedup (a user's ``add_many`` default) instead of without; dedup
    checks every item against its stored neighbours, several times slower on big stores."""


# --------------------------------------------------------------------------- options


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"1000,10000"`` (``10k``/``1m`` accepted) as sizes; MemoryValidationError if malformed."""
    sizes: list[int] = []
    for part in text.split(","):
        raw = part.strip().lower().replace("_", "")
        mult = 1
        if raw.endswith("k"):
            raw, mult = raw[:-1], 1_000
        elif raw.endswith("m"):
            raw, mult = raw[:-1], 1_000_000
        if not raw.isdigit() or int(raw) * mult < 1:
            msg = f"--sizes: {part.strip()!r} is not a positive whole number (e.g. 1000,10000)"
            raise MemoryValidationError(msg)
        sizes.append(int(raw) * mult)
    return tuple(sizes)


def parse_backend(text: str) -> str:
    """``sqlite``, ``memory`` or a PostgreSQL URL; MemoryValidationError for anything else."""
    value = text.strip()
    if value.lower() in ("sqlite", "memory"):
        return value.lower()
    if value.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return value
    msg = f"--backend: {text!r} is not sqlite, memory or a postgresql:// URL"
    raise MemoryValidationError(msg)


# --------------------------------------------------------------------------- corpus

_PEOPLE = ["Priya", "Marco", "Chen", "Amara", "Lukas", "Sofia", "Kenji", "Fatima", "Diego", "Ines"]
_SYSTEMS = [
    "billing",
    "auth",
    "search",
    "checkout",
    "ingest",
    "reporting",
    "notifications",
    "cache",
]
_TOOLS = ["PostgreSQL", "Redis", "Kafka", "Litestar", "FastAPI", "Terraform", "Kubernetes", "React"]
_VERBS = ["deployed", "rolled back", "migrated", "profiled", "refactored", "reviewed", "debugged"]
_ISSUES = ["a memory leak", "slow queries", "a race condition", "a flaky test", "timeouts", "OOMs"]
_PREFS = ["dark mode", "short answers", "type hints", "small PRs", "tabs", "detailed test plans"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend"]
_TEMPLATES = [
    "{p} {v} the {s} service on {d} after {i} showed up in staging (ticket {n}).",
    "The {s} team stores its data in {t}; {p} owns schema version {n}.",
    "{p} prefers {pref} and asked for it again in the sprint {n} retro.",
    "Incident {n}: {s} had {i}; fixed by {p} with a config change in {t}.",
    "Run the {s} migrations before deploying {t} upgrade {n}, says {p}.",
    "Customer ticket {n} reports {i} in the {s} dashboard since {d}.",
    "Decision {n}: the {s} service moves from {t} to {t2} next quarter.",
    "{p} reviewed the {s} PR {n} on {d} and requested {pref}.",
]
_QUERY_FORMS = [
    "what went wrong with the {s} service around ticket {n}?",
    "who owns the {s} schema (version {n})?",
    "what does {p} prefer, as said in retro {n}?",
    "which database does {s} use since decision {n}?",
    "incidents involving {i} in {s}, like incident {n}",
    "how do we deploy {t} upgrade {n}?",
]


def _fill(rng: random.Random, template: str, n: int) -> str:
    return template.format(
        p=rng.choice(_PEOPLE),
        v=rng.choice(_VERBS),
        s=rng.choice(_SYSTEMS),
        i=rng.choice(_ISSUES),
        t=rng.choice(_TOOLS),
        t2=rng.choice(_TOOLS),
        pref=rng.choice(_PREFS),
        d=rng.choice(_DAYS),
        n=n,
    )


def _synthetic(count: int, forms: Sequence[str], seed: int, taken: set[str]) -> list[str]:
    """``count`` distinct texts (none in ``taken``, which is updated) from ``forms``."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        text = _fill(rng, rng.choice(forms), rng.randint(1, 999_999))
        if text not in taken:
            taken.add(text)
            out.append(text)
    return out


def _dataset_texts(path: Path) -> tuple[list[str], list[str], str]:
    """Distinct turn texts and questions of a LoCoMo or LongMemEval file, and its kind."""
    from memvault.bench.datasets import load_locomo, load_longmemeval

    try:
        with path.open(encoding="utf-8") as fh:
            head = fh.read(4096)
    except OSError as exc:
        msg = f"--corpus: cannot read {str(path)!r}: {exc.strerror or exc}"
        raise MemoryValidationError(msg) from None
    texts: list[str]
    if '"haystack_sessions"' in head or '"question_id"' in head:
        lme = load_longmemeval(path)
        texts = [t.content for item in lme.items for s in item.sessions for t in s.turns]
        questions = [item.question for item in lme.items]
        kind = "longmemeval"
    else:
        locomo = load_locomo(path)
        texts = [t.text for c in locomo.conversations for t in c.turns]
        questions = [qa.question for c in locomo.conversations for qa in c.qas]
        kind = "locomo"
    return list(dict.fromkeys(t for t in texts if t.strip())), list(dict.fromkeys(questions)), kind


def build_corpus(options: ScaleOptions) -> dict[str, Any]:
    """The texts, queries and single-add texts every worker uses, and a description of them.

    Each size gets its own ``queries + 1`` queries (one untimed warm-up) and its own ``adds``
    texts, so nothing repeats across sizes within a worker.
    """
    n_texts = max(options.sizes)
    n_queries = (options.queries + 1) * len(options.sizes)
    n_adds = options.adds * len(options.sizes)
    taken: set[str] = set()
    if options.corpus == "synthetic":
        texts = _synthetic(n_texts, _TEMPLATES, 7, taken)
        queries = _synthetic(n_queries, _QUERY_FORMS, 11, set())
        adds = _synthetic(n_adds, _TEMPLATES, 13, taken)
        described = "synthetic"
    else:
        path = Path(options.corpus).expanduser()
        pool, questions, kind = _dataset_texts(path)
        texts = pool[:n_texts]
        adds = pool[n_texts : n_texts + n_adds]
        taken.update(pool)
        real_texts, real_adds = len(texts), len(adds)
        texts += _synthetic(n_texts - len(texts), _TEMPLATES, 7, taken)
        adds += _synthetic(n_adds - len(adds), _TEMPLATES, 13, taken)
        queries = questions[:n_queries]
        real_queries = len(queries)
        queries += _synthetic(n_queries - len(queries), _QUERY_FORMS, 11, set(queries))
        described = (
            f"{kind} {path.name}: {real_texts + real_adds:,} turns and "
            f"{real_queries:,} questions used"
        )
        if real_texts + real_adds < n_texts + n_adds or real_queries < n_queries:
            described += " (synthetic top-up)"
    return {"texts": texts, "queries": queries, "adds": adds, "description": described}


# --------------------------------------------------------------------------- builds


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _this_src() -> Path:
    """The directory holding this build's ``memvault`` package (``src`` in a checkout)."""
    return Path(__file__).resolve().parents[2]


def _repo_root(src: Path) -> Path | None:
    top = _git(src, "rev-parse", "--show-toplevel")
    return Path(top) if top else None


def _build_info(src: Path) -> dict[str, Any]:
    root = _repo_root(src)
    info: dict[str, Any] = {"src": str(src), "commit": None, "dirty": None}
    if root is not None:
        info["commit"] = _git(root, "rev-parse", "HEAD")
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        info["dirty"] = bool(status) if status is not None else None
    return info


def _resolve_ref(ref: str) -> tuple[Path, str]:
    """(repository root, commit) of ``ref``; ScaleError naming the problem otherwise."""
    root = _repo_root(_this_src())
    if root is None:
        msg = "--compare needs memvault running from a git checkout (this one is not)"
        raise ScaleError(msg)
    if ref.startswith("-"):
        msg = f"--compare: {ref!r} is not a git ref"
        raise ScaleError(msg)
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if not commit:
        msg = f"--compare: {ref!r} names no commit in {root}"
        raise ScaleError(msg)
    return root, commit


@contextmanager
def _worktree(root: Path, commit: str, where: Path) -> Iterator[Path]:
    """A detached worktree of ``commit`` at ``where``, removed afterwards."""
    done = subprocess.run(
        ["git", "-C", str(root), "worktree", "add", "--detach", "--quiet", str(where), commit],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["git worktree add failed"])[-1]
        raise ScaleError(f"--compare: {last}")
    try:
        yield where
    finally:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "remove", "--force", str(where)],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(where, ignore_errors=True)
        subprocess.run(
            ["git", "-C", str(root), "worktree", "prune"], capture_output=True, check=False
        )


# --------------------------------------------------------------------------- workers


class _Worker:
    """A worker process measuring the build whose ``src`` directory is on its PYTHONPATH."""

    def __init__(self, name: str, src: Path, corpus: Path, backend: str, workdir: Path) -> None:
        self.name = name
        workdir.mkdir(parents=True, exist_ok=True)
        # The worker script is copied out of the package so that its directory (put first on
        # sys.path by Python) holds nothing that could shadow a module.
        script = workdir / "scale_worker.py"
        shutil.copyfile(_WORKER, script)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        env["PYTHONUNBUFFERED"] = "1"
        self._stderr: IO[bytes] = (workdir / "stderr.log").open("w+b")
        self._proc = subprocess.Popen(
            [sys.executable, str(script), str(corpus), backend, str(workdir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
            cwd=workdir,
        )
        self.ready: dict[str, Any] = {}

    def _fail(self, what: str) -> ScaleError:
        self._stderr.seek(0)
        tail = [ln for ln in self._stderr.read().decode(errors="replace").splitlines() if ln]
        last = tail[-1] if tail else "no output"
        return ScaleError(f"the {self.name} build's worker {what}: {last}")

    def _read(self, label: str, progress: StepProgress | None) -> dict[str, Any]:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not a protocol line
            if "progress" in msg:
                if progress is not None:
                    done, total = msg["progress"]
                    progress(label, int(done), int(total))
                continue
            if "error" in msg:
                raise ScaleError(f"the {self.name} build failed in {label}: {msg['error']}")
            if "ready" in msg:
                return dict(msg["ready"])
            return dict(msg["result"])
        raise self._fail("exited")

    def wait_ready(self) -> dict[str, Any]:
        self.ready = self._read("start-up", None)
        return self.ready

    def call(
        self, command: dict[str, Any], label: str, progress: StepProgress | None
    ) -> dict[str, Any]:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(command) + "\n")
            self._proc.stdin.flush()
        except OSError:
            raise self._fail("is gone") from None
        return self._read(label, progress)

    def close(self) -> None:
        try:
            if self._proc.poll() is None and self._proc.stdin is not None:
                self._proc.stdin.write('{"op": "quit"}\n')
                self._proc.stdin.flush()
                self._proc.stdin.close()
            self._proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        finally:
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._stderr.close()


# --------------------------------------------------------------------------- run


@dataclass
class _Side:
    name: str
    worker: _Worker
    build: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)


def _ratio(this: Any, ref: Any) -> float | None:
    if not isinstance(this, int | float) or not isinstance(ref, int | float) or not ref:
        return None
    return float(this) / float(ref)


def run_scale(options: ScaleOptions, progress: StepProgress | None = None) -> dict[str, Any]:
    """Run the benchmark (and the ``compare`` build beside it); return the JSON report.

    Raises:
        MemoryValidationError: a bad option or corpus file.
        ScaleError: ``compare`` names no commit, or a worker failed.
    """
    if options.queries < 1 or options.adds < 0:
        msg = "--queries must be at least 1 and --adds at least 0"
        raise MemoryValidationError(msg)
    backend = parse_backend(options.backend)
    ref = _resolve_ref(options.compare) if options.compare is not None else None
    corpus = build_corpus(options)
    started = time.perf_counter()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memvault-scale-")))
        corpus_file = tmp / "corpus.json"
        corpus_file.write_text(json.dumps(corpus), encoding="utf-8")
        builds: list[tuple[str, Path, dict[str, Any]]] = []
        this_src = _this_src()
        builds.append(("this", this_src, _build_info(this_src)))
        if ref is not None:
            root, commit = ref
            tree = stack.enter_context(_worktree(root, commit, tmp / "ref-tree"))
            info = {"src": str(tree / "src"), "commit": commit, "dirty": False}
            info["ref"] = options.compare
            builds.append(("ref", tree / "src", info))
        sides: list[_Side] = []
        for name, src, info in builds:
            worker = _Worker(name, src, corpus_file, backend, tmp / f"work-{name}")
            stack.callback(worker.close)
            sides.append(_Side(name, worker, info))
        for side in sides:  # both load their model at the same time
            side.build.update(side.worker.wait_ready())
            if ref is not None and not Path(side.build["module"]).is_relative_to(
                Path(side.build["src"]).resolve()
            ):
                msg = f"the {side.name} build imported memvault from {side.build['module']}"
                raise ScaleError(msg)
        for index, size in enumerate(options.sizes):
            for side in sides:
                side.worker.call({"op": "open", "size": size}, f"{size:,} open", None)
            rows = _measure_size(sides, options, index, size, progress)
            for side in sides:
                side.rows.append(rows[side.name])
    report: dict[str, Any] = {
        "benchmark": "scale",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - started, 1),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "settings": {
            "sizes": list(options.sizes),
            "backend": _redact(backend),
            "queries": options.queries,
            "adds": options.adds,
            "ingest_dedup": options.ingest_dedup,
            "preset": "default",
            "corpus": corpus["description"],
            "compare": options.compare,
        },
        "builds": {side.name: side.build for side in sides},
        "results": {side.name: side.rows for side in sides},
    }
    if len(sides) == 2:
        this_rows, ref_rows = sides[0].rows, sides[1].rows
        report["ratios"] = [
            {"size": a["size"]} | {key: _ratio(a.get(key), b.get(key)) for key, _, _ in METRICS}
            for a, b in zip(this_rows, ref_rows, strict=True)
        ]
    return report


INGEST_CHUNKS = 8
"""A size's ingest runs in about this many chunks per build, alternating the builds."""
CHUNK = 25
"""Searches or single adds per chunk, alternating the builds."""


def _chunks(start: int, stop: int, step: int) -> list[tuple[int, int]]:
    return [(i, min(i + step, stop)) for i in range(start, stop, step)]


def _measure_size(
    sides: Sequence[_Side],
    options: ScaleOptions,
    index: int,
    size: int,
    progress: StepProgress | None,
) -> dict[str, dict[str, Any]]:
    """Ingest, search and add on every side's open store of ``size``; finish it; the rows.

    Each step runs in chunks, the builds taking turns chunk by chunk and the order flipping
    every chunk (A B B A A B ...), so that a burst of load on a shared machine falls on both.
    """
    rows: dict[str, dict[str, Any]] = {s.name: {"size": size} for s in sides}
    order = list(sides)

    def step(label: str, commands: list[tuple[dict[str, Any], int]]) -> dict[str, list[Any]]:
        answers: dict[str, list[Any]] = {s.name: [] for s in sides}
        total = sum(units for _, units in commands) * len(sides)
        done = 0
        for command, units in commands:
            for side in order:
                base = done

                def report(_: str, d: int, __: int, base: int = base) -> None:
                    if progress is not None:
                        progress(label, base + d, total)

                answers[side.name].append(side.worker.call(command, label, report))
                done += units
            order.reverse()
        return answers

    batch = 256
    dedup = None if options.ingest_dedup else False
    per_chunk = max(batch, -(-size // INGEST_CHUNKS // batch) * batch)
    ingest = step(
        f"{size:,}: add_many",
        [
            ({"op": "ingest", "start": a, "stop": b, "dedup": dedup}, b - a)
            for a, b in _chunks(0, size, per_chunk)
        ],
    )
    q0 = index * (options.queries + 1)
    search = step(
        f"{size:,}: search",
        [
            ({"op": "search", "start": q0 + a + (a > 0), "count": b - a, "warmup": a == 0}, b - a)
            for a, b in _chunks(0, options.queries, CHUNK)
        ],
    )
    a0 = index * options.adds
    adds = step(
        f"{size:,}: add (dedup)",
        [
            ({"op": "adds", "start": a0 + a, "count": b - a}, b - a)
            for a, b in _chunks(0, options.adds, CHUNK)
        ],
    )
    finish = step(f"{size:,}: finish", [({"op": "finish"}, 1)])
    for side in sides:
        row = rows[side.name]
        seconds = sum(r["seconds"] for r in ingest[side.name])
        row["add_many_per_s"] = size / seconds if seconds > 0 else None
        row["ingest_s"] = seconds
        row["stored"] = sum(r["stored"] for r in ingest[side.name])
        lat = [ms for r in search[side.name] for ms in r["latencies_ms"]]
        row["searches"] = len(lat)
        row["search_p50_ms"] = percentile(lat, 50)
        row["search_p95_ms"] = percentile(lat, 95)
        row["search_p99_ms"] = percentile(lat, 99)
        add_s = sum(r["seconds"] for r in adds[side.name])
        row["adds"] = options.adds
        row["add_dedup_per_s"] = options.adds / add_s if options.adds and add_s > 0 else None
        row.update(finish[side.name][0])
    return rows


def _redact(backend: str) -> str:
    """A backend for the report: a PostgreSQL URL without its password."""
    if "://" not in backend or "@" not in backend:
        return backend
    scheme, rest = backend.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}@{host}"


# --------------------------------------------------------------------------- rendering


def _fmt(key: str, value: Any) -> str:
    if not isinstance(value, int | float):
        return "-"
    if key.endswith("_ms"):
        return f"{value:.2f}"
    if key.endswith("_mib"):
        return f"{value:.1f}"
    return f"{value:,.0f}"


def render_scale(report: dict[str, Any]) -> Table:
    """A rich table of a :func:`run_scale` report (ratios are this/ref)."""
    settings = report["settings"]
    builds = report["builds"]
    compare = "ratios" in report
    title = (
        f"memvault bench scale: {settings['backend']}, default preset, "
        f"{settings['queries']} searches and {settings['adds']} adds per size, "
        f"{report['machine']['cpu_count']} CPUs"
    )
    caption_parts = [
        f"add_many /s: memories per second in batches of 256, dedup "
        f"{'on' if settings.get('ingest_dedup') else 'off'}; p50/p95/p99: one search, query "
        "embedding included; add /s: single add() calls with dedup on; RSS: the worker's "
        "peak; disk: the store's files",
        f"corpus: {settings['corpus']}",
    ]
    for name, build in builds.items():
        commit = (build.get("commit") or "?")[:10]
        dirty = "+dirty" if build.get("dirty") else ""
        label = f" ({build['ref']})" if build.get("ref") else ""
        caption_parts.append(f"{name}: {commit}{dirty}{label}")
    if compare:
        caption_parts.append(
            "ratio = this/ref: above 1 is faster for /s columns, slower (or bigger) for the others"
        )
    # No vertical rules: a comparison (9 columns) then fits an 80-column pipe or log file.
    table = Table(
        title=title, caption="\n".join(caption_parts), box=box.SIMPLE_HEAD, caption_justify="left"
    )
    table.add_column("size", justify="right")
    if compare:
        table.add_column("build")
    for key, column, _ in METRICS:
        table.add_column(column, justify="right", min_width=8 if key == "add_many_per_s" else None)
    results = report["results"]
    for index, row in enumerate(results["this"]):
        size = f"{row['size']:,}"
        if not compare:
            table.add_row(size, *(_fmt(k, row.get(k)) for k, _, _ in METRICS))
            continue
        ref_row = results["ref"][index]
        ratio = report["ratios"][index]
        table.add_row(size, "this", *(_fmt(k, row.get(k)) for k, _, _ in METRICS))
        table.add_row("", "ref", *(_fmt(k, ref_row.get(k)) for k, _, _ in METRICS))
        table.add_row(
            "",
            "ratio",
            *(_fmt_ratio(ratio.get(k), better_high) for k, _, better_high in METRICS),
            end_section=index < len(results["this"]) - 1,
        )
    return table


def _fmt_ratio(value: float | None, higher_is_better: bool) -> str:
    if value is None:
        return "-"
    text = f"{value:.2f}x"
    better = value > 1.05 if higher_is_better else value < 0.95
    worse = value < 0.95 if higher_is_better else value > 1.05
    if better:
        return f"[green]{text}[/green]"
    if worse:
        return f"[red]{text}[/red]"
    return text

"""One side of ``memvault bench scale``: a process that measures the memvault it imports.

Run as a script (``python _scale_worker.py CORPUS BACKEND WORKDIR``) with ``PYTHONPATH`` naming
the ``src`` directory of the build under test, so ``import memvault`` loads that build. The
driver (:mod:`memvault.bench.scale`) sends one JSON command per line on stdin and reads JSON
lines on stdout: ``{"progress": [done, total]}`` while a step runs, then ``{"result": {...}}``
or ``{"error": "..."}``.

This file must run against *older* builds too (``--compare REF``), so it imports nothing from
memvault beyond the long-standing API (``memvault.memory.AsyncMemory`` with ``add_many``,
``add``, ``search``; ``memvault.embeddings.default_embedder``) and nothing from
:mod:`memvault.bench`.

Commands (the driver sends each step in chunks, alternating the two builds chunk by chunk):

* ``{"op": "open", "size": N}`` - a fresh, empty store (untimed; peak RSS is reset here).
* ``{"op": "ingest", "start": i, "stop": j, "dedup": false|null}`` - ``add_many`` of corpus
  texts ``i .. j`` in batches of 256 (embedding included; ``null``: the store's dedup default);
  answers the seconds and the ids returned.
* ``{"op": "search", "start": i, "count": n, "warmup": bool}`` - with warmup, an untimed search
  on query i first; then n timed searches with the default preset on the next queries (unique,
  so the query-embedding cache never answers); answers the latencies.
* ``{"op": "adds", "start": i, "count": n}`` - n single ``add`` calls with dedup on.
* ``{"op": "finish"}`` - closes the store; answers peak RSS and the store's size on disk.
* ``{"op": "quit"}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

BATCH = 256
AGENT = "bench"


# The protocol's channel; main() points sys.stdout at stderr so that nothing the library prints
# can break a message.
_OUT = sys.stdout


def _emit(message: dict[str, Any]) -> None:
    _OUT.write(json.dumps(message) + "\n")
    _OUT.flush()


def _reset_peak_rss() -> bool:
    """Reset the process's peak RSS (Linux >= 4.0); False where it cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _peak_rss_mib() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _dir_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1_048_576


def _version() -> str | None:
    try:
        from memvault._version import __version__
    except ImportError:
        return None
    return str(__version__)


def _config() -> Any:
    """A configuration without the per-agent cap (a 100k store exceeds the default 10k)."""
    try:
        from memvault.config import MemoryOptionsConfig, MemvaultConfig

        return MemvaultConfig(options=MemoryOptionsConfig(max_memories_per_agent=None))
    except Exception:  # an older build without these names: its defaults
        return None


class Side:
    """The state of one worker: the embedder, the corpus and the store of the current size."""

    def __init__(self, corpus: Path, backend: str, workdir: Path) -> None:
        data = json.loads(corpus.read_text(encoding="utf-8"))
        self.texts: list[str] = data["texts"]
        self.queries: list[str] = data["queries"]
        self.adds: list[str] = data["adds"]
        self.backend = backend
        self.workdir = workdir
        from memvault.embeddings import default_embedder

        self.embedder = default_embedder()
        self.embedder.embed_documents(["warm-up"])  # load the model now, not in a timed step
        self.embedder.embed_query("warm-up query")
        self.config = _config()
        self.mem: Any = None
        self.store_dir: Path | None = None
        self.schema: str | None = None
        self.size = 0
        self.peak_reset = False

    def _url(self) -> str:
        self.store_dir = None
        self.schema = None
        if self.backend == "memory":
            return "memory://"
        if self.backend == "sqlite":
            self.store_dir = self.workdir / f"store-{self.size}"
            shutil.rmtree(self.store_dir, ignore_errors=True)
            self.store_dir.mkdir(parents=True)
            return str(self.store_dir / "bench.db")
        # PostgreSQL: a fresh schema per size, dropped in finish.
        self.schema = f"memvault_scale_{uuid.uuid4().hex[:12]}"
        base = self._libpq_url()
        sep = "&" if "?" in base else "?"
        return f"{base}{sep}schema={self.schema}"

    def _libpq_url(self) -> str:
        """The PostgreSQL URL without a ``schema`` parameter (memvault's, not libpq's)."""
        parts = urlsplit(self.backend)
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
        return urlunsplit(parts._replace(query=urlencode(query)))

    async def open(self, size: int) -> dict[str, Any]:
        from memvault.memory import AsyncMemory

        self.size = size
        self.peak_reset = _reset_peak_rss()
        self.mem = AsyncMemory(
            self._url(), config=self.config, embedder=self.embedder, track_access=False
        )
        # Open (create, migrate) the store now: that is not part of any timed step.
        await self.mem.__aenter__()
        return {}

    async def ingest(self, start_at: int, stop: int, dedup: bool | None) -> dict[str, Any]:
        texts = self.texts[start_at:stop]
        ids: set[str] = set()
        _emit({"progress": [0, len(texts)]})
        t0 = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            chunk = texts[i : i + BATCH]
            items = [{"content": t} for t in chunk]
            ids.update(await self.mem.add_many(items, agent_id=AGENT, dedup=dedup))
            _emit({"progress": [min(i + BATCH, len(texts)), len(texts)]})
        return {"seconds": time.perf_counter() - t0, "stored": len(ids)}

    async def search(self, start_at: int, count: int, warmup: bool) -> dict[str, Any]:
        if warmup:
            # One untimed search (on a query of its own): the store's lazy index build is not a
            # search.
            await self.mem.search(self.queries[start_at], agent_id=AGENT, limit=10)
            start_at += 1
        queries = self.queries[start_at : start_at + count]
        latencies: list[float] = []
        _emit({"progress": [0, len(queries)]})
        for n, query in enumerate(queries, 1):
            t0 = time.perf_counter()
            await self.mem.search(query, agent_id=AGENT, limit=10)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            if n % 10 == 0 or n == len(queries):
                _emit({"progress": [n, len(queries)]})
        return {"latencies_ms": latencies}

    async def add_dedup(self, start_at: int, count: int) -> dict[str, Any]:
        texts = self.adds[start_at : start_at + count]
        _emit({"progress": [0, len(texts)]})
        t0 = time.perf_counter()
        for n, text in enumerate(texts, 1):
            await self.mem.add(text, agent_id=AGENT, dedup=True)
            if n % 10 == 0 or n == len(texts):
                _emit({"progress": [n, len(texts)]})
        return {"seconds": time.perf_counter() - t0}

    async def finish(self) -> dict[str, Any]:
        peak = _peak_rss_mib()
        if self.mem is not None:
            await self.mem.close()
            self.mem = None
        store_mib = None
        if self.store_dir is not None:
            store_mib = _dir_mib(self.store_dir)
            shutil.rmtree(self.store_dir, ignore_errors=True)
        if self.schema is not None:
            store_mib = self._drop_schema()
        return {"peak_rss_mib": peak, "peak_rss_per_size": self.peak_reset, "store_mib": store_mib}

    def _drop_schema(self) -> float | None:
        """Measure and drop the size's PostgreSQL schema (best effort)."""
        try:
            import psycopg

            with psycopg.connect(self._libpq_url(), autocommit=True) as conn:
                row = conn.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                    (self.schema,),
                ).fetchone()
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            return float(row[0]) / 1_048_576 if row else None
        except Exception:
            return None


def main(argv: list[str]) -> int:
    corpus, backend, workdir = Path(argv[0]), argv[1], Path(argv[2])
    sys.stdout = sys.stderr
    loop = asyncio.new_event_loop()
    t0 = time.perf_counter()
    try:
        side = Side(corpus, backend, workdir)
    except Exception as exc:
        _emit({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    _emit(
        {
            "ready": {
                "version": _version(),
                # The package directory (``memvault.memory`` is a module in some builds and a
                # package in others).
                "module": str(Path(str(sys.modules["memvault"].__file__)).resolve().parent),
                "model_id": getattr(side.embedder, "model_id", None),
                "startup_s": time.perf_counter() - t0,
                "pid": os.getpid(),
            }
        }
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        op = cmd.get("op")
        try:
            if op == "quit":
                break
            if op == "open":
                result = loop.run_until_complete(side.open(int(cmd["size"])))
            elif op == "ingest":
                run = side.ingest(int(cmd["start"]), int(cmd["stop"]), cmd.get("dedup"))
                result = loop.run_until_complete(run)
            elif op == "search":
                run = side.search(int(cmd["start"]), int(cmd["count"]), bool(cmd.get("warmup")))
                result = loop.run_until_complete(run)
            elif op == "adds":
                run = side.add_dedup(int(cmd["start"]), int(cmd["count"]))
                result = loop.run_until_complete(run)
            elif op == "finish":
                result = loop.run_until_complete(side.finish())
            else:
                _emit({"error": f"unknown command {op!r}"})
                continue
        except Exception as exc:
            _emit({"error": f"{type(exc).__name__}: {exc}"})
            continue
        _emit({"result": result})
    if side.mem is not None:
        loop.run_until_complete(side.finish())
    loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The house in figures: what issue 42 ("One core") asks to see before and after.

    python benchmarks/house.py [--src src] [--runs 10] [--searches 300] [--out house.json]

Prints, for the tree at ``--src`` (run it on a worktree of an older commit for "before"):

* lines of Python in ``src/memvault`` by top-level folder (generated files counted apart);
* the places ``add``'s and ``search``'s parameter lists are written, found by their parameter
  fingerprint (a function or model that declares ``supersedes`` and ``importance`` declares an
  add; ``query``, ``include_superseded``, ``min_relevance`` and ``explain`` a search), and the
  keyword-by-keyword call-throughs (calls passing six or more ``name=name`` keywords of them);
* ``import memvault``: median wall time and memvault modules loaded, over ``--runs`` fresh
  interpreters;
* one ``POST /v1/search`` through the real app (ASGI, key cache expired): the distinct memvault
  functions it runs, the modules they live in and the threads they run on (the recipe of the
  architecture review's appendix);
* CPU per search through a real ``memvault serve`` process against ``AsyncMemory.search`` in
  process on the same store, measured in one run, alternating blocks.

Files whose first line says ``Generated`` are counted apart: they are derived, not written.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

ADD_FINGERPRINT = frozenset({"supersedes", "importance"})
SEARCH_FINGERPRINT = frozenset({"query", "include_superseded", "min_relevance", "explain"})


def _generated(path: Path) -> bool:
    head = path.read_text(encoding="utf-8").lstrip().splitlines()[:2]
    return any("Generated" in line for line in head)


def lines_by_folder(src: Path) -> dict[str, dict[str, int]]:
    """Lines of Python under ``src/memvault``, by top-level folder (or module)."""
    pkg = src / "memvault"
    out: dict[str, dict[str, int]] = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg)
        key = rel.parts[0] if len(rel.parts) > 1 else "(top-level modules)"
        n = len(path.read_text(encoding="utf-8").splitlines())
        row = out.setdefault(key, {"written": 0, "generated": 0})
        row["generated" if _generated(path) else "written"] += n
    return out


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = node.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


def _fields(node: ast.ClassDef) -> set[str]:
    return {
        s.target.id
        for s in node.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }


def signature_places(src: Path) -> dict[str, Any]:
    """Where add's and search's parameter lists are written, and their call-throughs."""
    pkg = src / "memvault"
    found: dict[str, dict[str, list[str]]] = {
        "add": {"declarations": [], "call_throughs": [], "generated": []},
        "search": {"declarations": [], "call_throughs": [], "generated": []},
    }
    prints = {"add": ADD_FINGERPRINT, "search": SEARCH_FINGERPRINT}
    for path in sorted(pkg.rglob("*.py")):
        rel = str(path.relative_to(src))
        generated = _generated(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: set[str] | None = None
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = _params(node)
            elif isinstance(node, ast.ClassDef):
                names = _fields(node)
            if names is not None:
                for op, fp in prints.items():
                    if fp <= names:
                        where = f"{rel}:{node.lineno} {node.name}"
                        found[op]["generated" if generated else "declarations"].append(where)
            if isinstance(node, ast.Call) and not generated:
                same = {
                    k.arg
                    for k in node.keywords
                    if k.arg is not None and isinstance(k.value, ast.Name) and k.value.id == k.arg
                }
                for op, fp in prints.items():
                    if len(same) >= 6 and (fp - {"query"}) & same == fp - {"query"}:
                        found[op]["call_throughs"].append(f"{rel}:{node.lineno}")
    return {op: {k: len(v) for k, v in d.items()} | {"where": d} for op, d in found.items()}


def import_cost(src: Path, runs: int) -> dict[str, float]:
    """Median wall time of ``import memvault`` in a fresh interpreter, and modules loaded."""
    code = (
        "import sys, time; t = time.perf_counter(); import memvault; "
        "d = time.perf_counter() - t; "
        "print(d, sum(m == 'memvault' or m.startswith('memvault.') for m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    times, mods = [], 0
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        times.append(float(out[0]))
        mods = int(out[1])
    help_times = []
    for _ in range(max(3, runs // 2)):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memvault", "--help"], env=env, capture_output=True, check=True
        )
        help_times.append(time.perf_counter() - t)
    return {
        "import_s_median": statistics.median(times),
        "import_modules": mods,
        "help_s_median": statistics.median(help_times),
    }


_PROFILE = r"""
import asyncio, json, re, sys, tempfile, threading
import httpx
from memvault.config import load_config
from memvault.server.keys import InMemoryKeyStore
from memvault.server.rest.app import ServerSettings, create_app
from memvault.service import MemoryService

ROOT, ON, seen = "src/memvault/", [False], {}

CHECKS = [0]

def prof(frame, event, arg):
    name = frame.f_code.co_filename
    if ON[0] and event == "call" and ROOT in name:
        if frame.f_code.co_name == "check_agent":
            CHECKS[0] += 1
        seen.setdefault((name.split(ROOT)[1], frame.f_code.co_qualname),
                        threading.current_thread().name)

sys.setprofile(prof); threading.setprofile(prof)

async def main() -> None:
    svc = MemoryService(load_config(url=f"sqlite:///{tempfile.mkdtemp()}/t.db"))
    keys = InMemoryKeyStore()
    _, secret = keys.create(name="dev", scopes=["read", "write"], agent_id="dev-1")
    app = create_app(svc, keys=keys, settings=ServerSettings(mount_mcp=False))
    h = {"Authorization": f"Bearer {secret}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        items = [{"content": t} for t in ("Prefers Litestar over Flask",
                 "Likes dark mode in every editor", "Uses PostgreSQL 16 in production")]
        await c.post("/v1/memories/batch", json={"agent_id": "dev-1", "items": items}, headers=h)
        await c.post("/v1/search", json={"agent_id": "dev-1", "query": "warm up"}, headers=h)
        await asyncio.sleep(0.6)  # the warm-up's access counts are written; the key cache expires
        ON[0] = True
        r = await c.post("/v1/search", json={"agent_id": "dev-1", "query": "what editor theme?",
                                             "limit": 5}, headers=h)
        ON[0] = False
        assert r.status_code == 200, r.text
    await svc.close()

asyncio.run(main())
named = [k for k in seen if not re.search(r"<(listcomp|dictcomp|setcomp|genexpr|lambda)>", k[1])]
print(json.dumps({"functions": len(seen), "named": len(named),
                  "modules": len({f for f, _ in named}), "threads": len(set(seen.values())),
                  "agent_checks": CHECKS[0]}))
"""


def rest_search_profile(src: Path) -> dict[str, int]:
    """Distinct memvault functions, modules and threads of one REST search."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", _PROFILE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=src.parent,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


_CPU = r"""
import asyncio, json, sys, time
import httpx
from memvault import AsyncMemory

URL, DB, N, PID = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
QUERIES = ["what editor theme?", "which database in production?", "web framework of choice",
           "where does the user live?", "what language for scripts?", "meeting time"]

def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    import os
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

async def main():
    mem = AsyncMemory(f"sqlite:///{DB}")
    async with httpx.AsyncClient(base_url=URL, timeout=30) as c:
        body = lambda q: {"agent_id": "dev-1", "query": q, "limit": 5}
        for q in QUERIES:  # warm both
            (await c.post("/v1/search", json=body(q))).raise_for_status()
            await mem.search(q, agent_id="dev-1", limit=5)
        server, local = [], []
        for block in range(6):
            s0 = proc_cpu(PID)
            for i in range(N // 6):
                q = QUERIES[i % 6] + f" {block}"
                (await c.post("/v1/search", json=body(q))).raise_for_status()
            await asyncio.sleep(0.3)  # the server's write-behind of access counts lands
            server.append((proc_cpu(PID) - s0) / (N // 6))
            t0 = time.process_time()
            for i in range(N // 6):
                await mem.search(QUERIES[i % 6] + f" {block}", agent_id="dev-1", limit=5)
            await asyncio.sleep(0.3)
            local.append((time.process_time() - t0) / (N // 6))
    await mem.close()
    print(json.dumps({"server": server, "local": local}))

asyncio.run(main())
"""


def cpu_per_search(src: Path, searches: int) -> dict[str, float]:
    """CPU ms per search: a real server process vs AsyncMemory in process, one store."""
    from bench_server import SpawnedServer  # the benchmarks' own server harness

    facts = [
        "Prefers Litestar over Flask",
        "Likes dark mode in every editor",
        "Uses PostgreSQL 16 in production",
        "Lives in Lisbon since 2021",
        "Writes scripts in Python, services in Go",
        "Standup is at 9:30 every weekday",
    ]
    server = SpawnedServer(no_auth=True, src=src)
    server.start()
    try:
        import httpx

        assert server.tmp is not None and server.pid is not None
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for i in range(40):
                items = [{"content": f"{t} (note {i})"} for t in facts]
                body = {"agent_id": "dev-1", "items": items}
                client.post("/v1/memories/batch", json=body).raise_for_status()
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                _CPU,
                server.url,
                str(server.tmp / "bench.db"),
                str(searches),
                str(server.pid),
            ],
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        server.stop()
    data = json.loads(out.strip().splitlines()[-1])
    s_ms = statistics.median(data["server"]) * 1000
    l_ms = statistics.median(data["local"]) * 1000
    return {"server_cpu_ms": s_ms, "inprocess_cpu_ms": l_ms, "ratio": s_ms / l_ms}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the src/ folder to measure")
    ap.add_argument("--runs", type=int, default=10, help="fresh interpreters for import [10]")
    ap.add_argument("--searches", type=int, default=300, help="searches per side [300]")
    ap.add_argument("--skip", nargs="*", default=(), help="parts to skip: cpu profile import")
    ap.add_argument("--out", type=Path, default=None, help="also write JSON here")
    args = ap.parse_args(argv)
    src = args.src.resolve()
    result: dict[str, Any] = {"src": str(src)}
    folders = lines_by_folder(src)
    result["lines"] = folders
    result["lines_total"] = {
        k: sum(r[k] for r in folders.values()) for k in ("written", "generated")
    }
    places = signature_places(src)
    result["signatures"] = places
    for op, d in places.items():
        print(
            f"{op}: {d['declarations']} declarations, {d['call_throughs']} call-throughs, "
            f"{d['generated']} generated"
        )
        for where in d["where"]["declarations"]:
            print("   ", where)
    if "import" not in args.skip:
        result["import"] = import_cost(src, args.runs)
        print("import:", result["import"])
    if "profile" not in args.skip:
        result["rest_search"] = rest_search_profile(src)
        print("REST search:", result["rest_search"])
    if "cpu" not in args.skip:
        result["cpu"] = cpu_per_search(src, args.searches)
        print("CPU per search:", result["cpu"])
    width = max(map(len, folders))
    for name, row in sorted(folders.items(), key=lambda kv: -kv[1]["written"]):
        gen = f"  (+{row['generated']} generated)" if row["generated"] else ""
        print(f"  {name:<{width}} {row['written']:>7}{gen}")
    print("  total", result["lines_total"])
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()

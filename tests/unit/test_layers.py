"""The dependency rule of DESIGN.md §2, checked on the source: layers, and no import cycles.

Every module under ``src/memvault`` is parsed with :mod:`ast` (nothing is imported) and every
import of a ``memvault`` module is an edge: module-level imports, imports inside functions
(lazy), and imports under ``if TYPE_CHECKING:`` (a typing edge upward is still an upward
dependency: the lower module cannot be understood, or type-checked, without the higher one).
Relative imports are resolved. An edge goes to the module named (``from memvault.x import y``
goes to ``memvault.x.y`` when that is a module, else to ``memvault.x``); the implicit import of
parent packages is not an edge, or every absolute import between siblings would be a cycle.

Two rules:

* no module imports a module of a higher layer (same-layer imports are fine);
* the module graph has no cycle (no strongly connected component of more than one module).

The layers are keyed by package prefixes (the longest prefix that names a module wins), so a
new module inside a mapped package needs nothing here; a new top-level module or package does.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "memvault"

# Bottom to top, one entry per top-level package or module: a folder is one layer (the
# folder-level tests below refuse an entry for a module inside a package). A module may import
# modules of its own layer and of lower layers.
LAYERS: dict[str, int] = {
    # 0: foundation: pure data, the error tree, the protocols, small helpers that import
    # nothing of ours but each other.
    "memvault._ids": 0,
    "memvault._lazy": 0,  # the lazy __getattr__ of packages (imports nothing of ours)
    "memvault._version": 0,
    "memvault._jsonschema": 0,  # tool argument schemas from pydantic models
    "memvault.validation": 0,  # id and input checks every layer shares
    "memvault._actor": 0,
    "memvault._inline": 0,  # when blocking work may run on the event loop's thread
    "memvault.errors": 0,
    "memvault.models": 0,
    "memvault.protocols": 0,
    # 1: pure functions over models and config, and the LLM clients (they import only layer 0).
    "memvault.config": 1,  # every section model, loading and provenance (config/)
    "memvault.retrieval": 1,
    "memvault.write": 1,
    "memvault.consolidation": 1,
    "memvault.llm": 1,
    # 2: implementations of the protocols, and the persistence built on them.
    "memvault._inputs": 2,  # argument -> model helpers shared by AsyncMemory and the client
    "memvault._search": 2,  # search composition over retrieval; used by backends
    "memvault._sidetables": 2,  # side-table connection plumbing (sessions, learning, keys)
    "memvault.backends": 2,
    "memvault.embeddings": 2,
    "memvault.graph": 2,  # entity graph side tables, extraction, recall
    "memvault.conversation": 2,  # message log, session snapshots, compaction, embedding queue
    "memvault.sessions": 2,  # the sessions API over memvault.conversation's session stores
    "memvault.persistence": 2,  # operational records (seed 001) in side tables
    # 3: agent-side features over a memory (typed against injection.memory_api.MemoryAPI).
    "memvault.agent": 3,
    "memvault.injection": 3,
    # Lessons, skill pool, approvals, org memory, forgetting and promotion of graph regions.
    "memvault.learning": 3,
    # 4: the front door, composing everything below, and the tools over stores.
    "memvault.memory": 4,
    "memvault.reindex": 4,  # re-embedding a store in place: backends and the facade
    "memvault.migrate": 4,  # store-to-store copy; imports only backends/embeddings/config
    "memvault.backup": 4,  # online backup/restore of a store: backends and config
    "memvault.integrity": 4,  # check/repair of a store's derived data: backends, embeddings
    # 5: applications over the front door.
    # Operation declarations: inputs, scopes, JSON renderings of the core's and features' results.
    "memvault.api": 5,
    "memvault.service": 5,
    "memvault.bench": 5,  # benchmark runners drive an AsyncMemory (bench/_runner.py)
    "memvault.maintenance": 5,  # the scheduler drives a Memory or a MemoryService
    "memvault.integrations": 5,  # framework adapters over the front door and sessions
    "memvault.finetune": 5,  # fine-tune pipeline: embeddings, llm, bench.metrics (issue 19)
    "memvault.testing": 5,  # contract suites for plugin authors; imported by nothing in src
    # 6: transports and clients.
    "memvault.server": 6,
    "memvault.cli": 6,
    "memvault.remote": 6,  # generated from AsyncMemory's signatures over memvault._remote
    "memvault._remote": 6,  # the remote client's transport and hand-written methods
    # 7: the package itself (re-exports the public API) and ``python -m memvault``.
    "memvault": 7,
    "memvault.__main__": 7,
}


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} -> {self.target}"


Graph = Mapping[str, Iterable[Edge]]


# --- reading the source ------------------------------------------------------------------------


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(src: Path = SRC, root: str = ROOT) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    return {module_name(p, src): p for p in sorted((src / root).rglob("*.py"))}


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module ``name`` refers to: itself, or the nearest enclosing module (an attribute)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _base_of_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{target}" if target else package


def imports_of(
    module: str, path: Path, modules: Mapping[str, Path], root: str = ROOT
) -> list[Edge]:
    """Every import of a module of ``root`` in ``path``, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shown = str(path.relative_to(SRC.parent)) if path.is_relative_to(SRC.parent) else str(path)
    edges: list[Edge] = []

    def add(name: str, line: int) -> None:
        if name != root and not name.startswith(root + "."):
            return
        target = _resolve(name, modules)
        if target is not None and target != module:
            edges.append(Edge(module, target, shown, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _base_of_relative(
                    module, path.name == "__init__.py", node.level, node.module
                )
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base, node.lineno)
    return sorted(edges, key=lambda e: e.line)


def import_graph(src: Path = SRC, root: str = ROOT) -> dict[str, list[Edge]]:
    modules = discover(src, root)
    return {name: imports_of(name, path, modules, root) for name, path in modules.items()}


# --- the checks (pure over a graph, so they can be tested on a synthetic one) -------------------


def layer_of(module: str, layers: Mapping[str, int] = LAYERS, root: str = ROOT) -> int | None:
    """The layer of the longest mapped prefix of ``module``; the root maps only itself."""
    name = module
    while name:
        if name in layers and (name != root or module == root):
            return layers[name]
        name = name.rpartition(".")[0]
    return None


def unmapped(graph: Graph, layer: Callable[[str], int | None] = layer_of) -> list[str]:
    return sorted(m for m in graph if layer(m) is None)


def upward_edges(graph: Graph, layer: Callable[[str], int | None] = layer_of) -> list[str]:
    """Each import of a module of a higher layer, as ``path:line: a (L) -> b (L)``."""
    out = []
    for module, edges in sorted(graph.items()):
        for e in edges:
            low, high = layer(module), layer(e.target)
            if low is not None and high is not None and high > low:
                out.append(
                    f"{e.path}:{e.line}: {e.source} (layer {low}) -> {e.target} (layer {high})"
                )
    return out


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module, each sorted."""
    succ = {m: sorted({e.target for e in edges if e.target in graph}) for m, edges in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(succ):
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = succ[node]
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_through(graph: Graph, component: list[str]) -> list[Edge]:
    """A shortest cycle through the component's first module, as the edges that make it."""
    members = set(component)
    start = component[0]
    first: dict[str, Edge] = {}
    for m in component:
        for e in graph[m]:
            first.setdefault(f"{m}\0{e.target}", e)
    # BFS from start back to start, inside the component.
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        following = []
        for node in frontier:
            for e in graph[node]:
                if e.target == start:
                    path = [first[f"{node}\0{start}"]]
                    while node != start:
                        parent = previous[node]
                        path.append(first[f"{parent}\0{node}"])
                        node = parent
                    return path[::-1]
                if e.target in members and e.target not in seen:
                    seen.add(e.target)
                    previous[e.target] = node
                    following.append(e.target)
        frontier = following
    raise AssertionError(f"{component} is not a cycle")  # pragma: no cover


def describe_cycles(graph: Graph) -> list[str]:
    """One block per cycle: its modules, a cycle path, and every edge inside it."""
    out = []
    for component in strongly_connected(graph):
        members = set(component)
        path = cycle_through(graph, component)
        inside = [str(e) for m in component for e in graph[m] if e.target in members]
        out.append(
            f"cycle of {len(component)} modules: {', '.join(component)}\n"
            f"  path: {' -> '.join([path[0].source, *(e.target for e in path)])}\n"
            + "".join(f"    {e}\n" for e in path)
            + "  all edges inside it:\n"
            + "".join(f"    {line}\n" for line in sorted(set(inside)))
        )
    return out


# --- the tests on memvault ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Edge]]:
    return import_graph()


def test_the_scan_sees_the_package(graph: dict[str, list[Edge]]) -> None:
    # Guards against a vacuous pass: a wrong path or a broken parser would find nothing.
    assert len(graph) > 100
    assert "memvault.memory" in graph and "memvault.models" in graph
    factory_targets = {e.target for e in graph["memvault.conversation.session_factory"]}
    assert {
        "memvault.conversation.session_store",
        "memvault.backends.factory",
    } <= factory_targets  # lazy
    typed = {e.target for e in graph["memvault.injection.tool_based"]}
    assert "memvault.injection.memory_api" in typed  # under TYPE_CHECKING
    assert sum(len(edges) for edges in graph.values()) > 300


def test_every_module_has_a_layer(graph: dict[str, list[Edge]]) -> None:
    missing = unmapped(graph)
    assert not missing, "modules with no layer (add their package to LAYERS):\n" + "\n".join(
        missing
    )


def test_no_module_imports_a_higher_layer(graph: dict[str, list[Edge]]) -> None:
    violations = upward_edges(graph)
    assert not violations, "imports of a higher layer:\n" + "\n".join(violations)


def test_no_import_cycles(graph: dict[str, list[Edge]]) -> None:
    cycles = describe_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


# --- the checker on synthetic graphs, so the tests above cannot pass vacuously ------------------


def _graph(*edges: tuple[str, str], nodes: Iterable[str] = ()) -> dict[str, list[Edge]]:
    g: dict[str, list[Edge]] = {n: [] for n in nodes}
    for i, (a, b) in enumerate(edges, start=1):
        g.setdefault(a, []).append(Edge(a, b, f"{a.replace('.', '/')}.py", i))
        g.setdefault(b, [])
    return g


def test_checker_finds_an_upward_import() -> None:
    g = _graph(
        ("memvault.models", "memvault.errors"),  # same layer
        ("memvault.memory", "memvault.models"),  # downward
        ("memvault.injection.tools", "memvault.memory"),  # upward: 3 -> 4
        ("memvault.protocols", "memvault.injection.tools"),  # upward: 0 -> 3
    )
    assert upward_edges(g) == [
        "memvault/injection/tools.py:3: memvault.injection.tools (layer 3) -> memvault.memory"
        " (layer 4)",
        "memvault/protocols.py:4: memvault.protocols (layer 0) -> memvault.injection.tools"
        " (layer 3)",
    ]


def test_checker_finds_a_cycle_and_its_path() -> None:
    g = _graph(
        ("memvault.sessions.store", "memvault.sessions.sqlite"),
        ("memvault.sessions.sqlite", "memvault.sessions.models"),
        ("memvault.sessions.sqlite", "memvault.sessions.store"),
        (
            "memvault.sessions",
            "memvault.sessions.store",
        ),  # into the cycle, not part of it
        ("memvault.a", "memvault.b"),
        ("memvault.b", "memvault.c"),
        ("memvault.c", "memvault.a"),
    )
    assert strongly_connected(g) == [
        ["memvault.a", "memvault.b", "memvault.c"],
        ["memvault.sessions.sqlite", "memvault.sessions.store"],
    ]
    path = cycle_through(g, ["memvault.a", "memvault.b", "memvault.c"])
    assert [(e.source, e.target) for e in path] == [
        ("memvault.a", "memvault.b"),
        ("memvault.b", "memvault.c"),
        ("memvault.c", "memvault.a"),
    ]
    text = describe_cycles(g)
    assert len(text) == 2
    assert (
        "path: memvault.sessions.sqlite -> memvault.sessions.store -> memvault.sessions.sqlite"
        in (text[1])
    )
    acyclic = _graph(("memvault.x", "memvault.y"), ("memvault.y", "memvault.z"))
    assert strongly_connected(acyclic) == []


def test_checker_reads_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "memvault"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from memvault.top import thing\n")
    (pkg / "top.py").write_text("thing = 1\n")
    (pkg / "low.py").write_text("x = 1\n")
    (pkg / "sub" / "__init__.py").write_text("from . import mod\n")
    (pkg / "sub" / "mod.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import os\n"
        "from ..low import x\n"  # relative, two levels
        "if TYPE_CHECKING:\n"
        "    from memvault.top import thing\n"  # typing only
        "def f() -> None:\n"
        "    import memvault\n"  # lazy, the package itself
        "    from memvault.sub import mod\n"  # itself: not an edge
        "    from .other import y\n"  # relative, one level
    )
    (pkg / "sub" / "other.py").write_text("y = 1\n")
    g = import_graph(tmp_path, "memvault")
    assert set(g) == {
        "memvault",
        "memvault.top",
        "memvault.low",
        "memvault.sub",
        "memvault.sub.mod",
        "memvault.sub.other",
    }
    assert [(e.target, e.line) for e in g["memvault.sub.mod"]] == [
        ("memvault.low", 4),
        ("memvault.top", 6),
        ("memvault", 8),
        ("memvault.sub.other", 10),
    ]
    assert [e.target for e in g["memvault.sub"]] == ["memvault.sub.mod"]
    assert [e.target for e in g["memvault"]] == ["memvault.top"]
    # The root package maps only itself: an unknown top-level module has no layer.
    layers = {"memvault": 7, "memvault.sub": 1, "memvault.low": 0}
    assert layer_of("memvault", layers) == 7
    assert layer_of("memvault.sub.mod", layers) == 1
    assert layer_of("memvault.top", layers) is None
    assert unmapped(g, lambda m: layer_of(m, layers)) == ["memvault.top"]
    assert upward_edges(g, lambda m: layer_of(m, layers)) == [
        f"{pkg / 'sub' / 'mod.py'}:8: memvault.sub.mod (layer 1) -> memvault (layer 7)"
    ]


def _folder(module: str) -> str:
    return ".".join(module.split(".")[:2])


def folder_graph(graph: Graph) -> dict[str, list[Edge]]:
    """The import graph between top-level packages and modules (``memvault.graph``...)."""
    out: dict[str, list[Edge]] = {}
    for module, edges in graph.items():
        source = _folder(module)
        out.setdefault(source, [])
        for e in edges:
            if _folder(e.target) != source:
                out[source].append(Edge(source, _folder(e.target), e.path, e.line))
    return out


def test_each_folder_is_one_layer() -> None:
    # A per-module entry would let one package span layers, and folders knot again through it.
    inner = [name for name in LAYERS if name.count(".") > 1]
    assert not inner, f"layers given to modules inside a package: {inner}"


def test_no_import_cycles_between_folders(graph: dict[str, list[Edge]]) -> None:
    # Files can be acyclic while their folders are not: this is the knot of 17 packages the
    # architecture review of 2026-12-01 found (config -> graph.config -> ... -> config).
    cycles = describe_cycles(folder_graph(graph))
    assert not cycles, "import cycles between folders:\n" + "\n".join(cycles)


def test_the_folder_check_finds_a_knot_that_files_do_not_show() -> None:
    # a.x -> b.y and b.z -> a.w: no cycle between the four modules, one between a and b.
    files = _graph(("memvault.a.x", "memvault.b.y"), ("memvault.b.z", "memvault.a.w"))
    assert not strongly_connected(files)
    assert strongly_connected(folder_graph(files)) == [["memvault.a", "memvault.b"]]

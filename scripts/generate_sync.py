"""Generate the blocking facades (``src/memvault/memory/_sync.py``) from the async signatures.

    python scripts/generate_sync.py           # rewrite the file
    python scripts/generate_sync.py --check   # exit 1 if the checked-in file is stale

``Memory``, ``SyncLearning`` and ``SyncMemoryTools`` restate nothing by hand: each public
coroutine of the async class they wrap becomes a method with the same signature (overloads
included) that runs it to completion on the facade's loop thread, and each plain method or
property listed as a pass-through returns the async object's own. What cannot be derived (the
loop thread, construction, closing, members that wrap an async object in a blocking one) lives
in the hand-written bases of :mod:`memvault.memory._sync_base`.

Every public member of a wrapped class must be wrapped, passed through, written in the base or
listed as omitted with a reason: a member added to ``AsyncMemory`` fails the check
(``tests/unit/test_generated_sync.py``) until this table says what the sync facade does with it.
Imports come from the source modules: names a default value uses are imported at run time,
names only annotations use are imported for type checking only (``import memvault.memory``
loads no more than the async core does).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TARGET = SRC / "memvault" / "memory" / "_sync.py"
REMOTE_TARGET = SRC / "memvault" / "remote.py"


@dataclass(frozen=True)
class Facade:
    """One blocking class generated over one async class."""

    name: str
    """The generated class."""
    base: str
    """Its hand-written base in memvault.memory._sync_base."""
    module: str
    """The async class's module (dotted)."""
    source: str
    """The async class."""
    core: str
    """The attribute of the facade that holds the async object."""
    doc: str
    """The generated class's docstring."""
    wrap: tuple[str, ...] | None = None
    """Coroutines to wrap; None: every public coroutine."""
    passthrough: tuple[str, ...] = ()
    """Plain methods and properties whose result is the async object's own."""
    wrapped: dict[str, str] = field(default_factory=dict)
    """Members whose async result is handed to a generated blocking class: member -> class."""
    omit: dict[str, str] = field(default_factory=dict)
    """Public members the facade does not offer, with the reason."""
    remote: bool = False
    """Each wrapped coroutine sends its operation to a server (``self._op``) instead."""
    ops: dict[str, str] = field(default_factory=dict)
    """The operation a remote method sends, where its name is not the method's."""


FACADES = (
    Facade(
        name="Memory",
        base="MemoryBase",
        module="memvault.memory._async",
        source="AsyncMemory",
        core="_core",
        doc="""Typed, durable memory for agents (synchronous API over :class:`AsyncMemory`).

    Every method runs the async core's method of the same name and signature to completion.

    Example::

        mem = Memory()                                  # ~/.memvault/memvault.db
        mem.add("Prefers dark mode", agent_id="dev-1")
        hits = mem.search("ui preferences", agent_id="dev-1")

        remote = Memory("http://host:8765", api_key="mvk_...")  # a `memvault serve` server
    """,
        passthrough=(
            "backend",
            "location",
            "config",
            "retention",
            "response_cache",
            "context_strategy",
            "injection_strategy",
            "working_memory",
        ),
        wrapped={"learning": "SyncLearning", "memory_tools": "SyncMemoryTools"},
        omit={
            "graph": "the entity graph's engine is async; graph_recall is the blocking read",
            "llm": "an async provider; pass one in, or use the async core (aio)",
            "operations": "async repositories (seed 001): use the async core (aio.operations)",
            "__aenter__": "the sync facade is a plain context manager (_sync_base)",
            "__aexit__": "the sync facade is a plain context manager (_sync_base)",
            # Written in the base: the blocking view lives beside the async one; the loop.
            "conversations": "_sync_base",
            "close": "_sync_base",
        },
    ),
    Facade(
        name="SyncLearning",
        base="SyncLearningBase",
        module="memvault.learning.engine",
        source="LearningEngine",
        core="_engine",
        doc=""":class:`~memvault.learning.LearningEngine` for the sync :class:`Memory`.

    The same operations (learning, profiles, the skill pool, approvals, the evolver, org
    memory); every call blocks until it is done. :attr:`engine` is the awaitable engine
    underneath, for code that runs its own event loop.
    """,
        wrap=(
            "learn_from",
            "set_profile",
            "get_profile",
            "publish_org",
            "skills",
            "record_applications",
            "evolve",
            "approvals",
            "approval",
            "approve",
            "reject",
            "prune",
        ),
    ),
    Facade(
        name="SyncMemoryTools",
        base="SyncMemoryToolsBase",
        module="memvault.agent.memory_tools",
        source="MemoryTools",
        core="_tools",
        doc=""":class:`~memvault.agent.memory_tools.MemoryTools` for the sync :class:`Memory`.

    The same tools and definitions; every call blocks until it is done and returns its text.
    """,
        passthrough=("config", "get_tool_definitions"),
    ),
)

# The remote client: one method per operation whose arguments all travel as the operation's
# request model. Methods with rules of their own (batching, work kept local, capabilities a
# server does not offer) are written in memvault._remote.RemoteBase.
REMOTE = Facade(
    name="RemoteAsyncMemory",
    base="RemoteBase",
    module="memvault.memory._async",
    source="AsyncMemory",
    core="",
    doc=""":class:`~memvault.AsyncMemory` over the REST API of a memvault server.

    ``RemoteAsyncMemory("http://host:8765", api_key="mvk_...")`` (or ``AsyncMemory(url, ...)``)
    talks to ``memvault serve``; the key (default ``$MEMVAULT_API_KEY``) decides the tenant and
    what the caller may do. ``timeout`` bounds every request, in seconds. ``embedder``,
    ``preset`` and ``track_access`` are accepted for compatibility and ignored (the server
    embeds, ranks and counts accesses with its own configuration); a ``backend`` cannot be
    combined with a server URL.

    The HTTP client opens on first use, on the running event loop, and ``close()`` (or
    ``async with``) releases it.

    Raises:
        MemoryConfigError: a malformed URL or API key, a ``backend``, an unknown preset name,
            or a timeout that is not a positive number.
    """,
    remote=True,
    wrap=(
        "write",
        "clear",
        "sweep",
        "archived",
        "restore",
        "audit",
        "search",
        "get",
        "history",
        "count",
        "list",
        "working_note",
        "working",
        "clear_working",
        "set_profile",
        "evolve",
        "prune_procedural",
        "publish",
        "search_shared",
        "retract",
        "stats",
        "agents",
    ),
    ops={"write": "store"},
)

REMOTE_HEADER = (
    "# Generated by scripts/generate_sync.py from the async signatures: do not edit by hand.\n"
    '''"""The remote client: :class:`RemoteAsyncMemory` speaks the REST API of ``memvault serve``.

``AsyncMemory("http://host:8765", api_key=...)`` returns one, and ``Memory(...)`` with a server
URL runs one on its loop thread, so code moves from an embedded store to a server by changing the
URL: every method keeps its signature, its return type and its errors.

The methods here are generated from :class:`~memvault.AsyncMemory`'s signatures: each sends its
arguments as the operation's request model through the one generic path of
:class:`memvault._remote.RemoteBase` (checked with the server's own model and limits, sent by
the operation's route, the answer decoded into the method's return type). The transport, the
error mapping and the methods with rules of their own are written there.
"""
'''
)

HEADER = '''# Generated by scripts/generate_sync.py from the async signatures: do not edit by hand.
"""The blocking facades: :class:`Memory`, :class:`SyncLearning` and :class:`SyncMemoryTools`.

Each method runs the async method of the same name and signature to completion on the facade's
private loop thread (:mod:`memvault.memory._sync_base`). This file is generated by
``scripts/generate_sync.py``; ``tests/unit/test_generated_sync.py`` fails when it is stale.
"""
'''


def _module_file(module: str, src: Path = SRC) -> Path:
    path = src / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


@dataclass
class _Imports:
    """What a module binds at top level (under ``if TYPE_CHECKING:`` too): name -> import line.

    Whether the generated module imports a name at run time is decided by its own use of it
    (a default value needs it), not by how the source imports it.
    """

    bound: dict[str, str]

    @classmethod
    def of(cls, module: str, tree: ast.Module) -> _Imports:
        bound: dict[str, str] = {}

        def visit(body: list[ast.stmt]) -> None:
            for node in body:
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    visit(node.body)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for a in node.names:
                        as_ = f" as {a.asname}" if a.asname else ""
                        bound[a.asname or a.name] = f"from {node.module} import {a.name}{as_}"
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        as_ = f" as {a.asname}" if a.asname else ""
                        bound[a.asname or a.name.split(".")[0]] = f"import {a.name}{as_}"
                elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    bound.setdefault(node.name, f"from {module} import {node.name}")
                elif isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            bound.setdefault(t.id, f"from {module} import {t.id}")

        visit(tree.body)
        return cls(bound)


def _names(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # A quoted annotation ("builtins.list[str]") names things too; strings inside one
        # (Literal["system"]) do not.
        return _names(ast.parse(node.value, mode="eval").body)
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _summary(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    doc = ast.get_docstring(fn) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _call_args(args: ast.arguments) -> str:
    parts = [a.arg for a in [*args.posonlyargs, *args.args][1:]]  # less self
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    parts += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return ", ".join(parts)


class _Generator:
    def __init__(self, src: Path) -> None:
        self.src = src
        self.runtime: set[str] = set()
        self.typing: set[str] = set()

    def need(self, imports: _Imports, names: set[str], runtime: bool) -> None:
        for name in names:
            if name in vars(builtins) and name not in imports.bound:
                continue
            if name not in imports.bound:
                msg = f"cannot resolve {name!r} in the source module"
                raise SystemExit(msg)
            (self.runtime if runtime else self.typing).add(imports.bound[name])

    def facade(self, spec: Facade) -> str:
        tree = ast.parse(_module_file(spec.module, self.src).read_text(encoding="utf-8"))
        imports = _Imports.of(spec.module, tree)
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == spec.source)
        base_module = "memvault._remote" if spec.remote else "memvault.memory._sync_base"
        base_members = _base_members(spec.base, self.src, base_module)
        out = [f"class {spec.name}({spec.base}):", f'    """{spec.doc}"""', ""]
        seen: set[str] = set()
        groups: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for node in cls.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                groups.setdefault(node.name, []).append(node)
        for name, defs in groups.items():
            public = not name.startswith("_") or name in {"__aenter__", "__aexit__"}
            if not public or name in spec.omit:
                continue
            if spec.wrap is not None and name not in {*spec.wrap, *spec.passthrough}:
                continue
            seen.add(name)
            if name in base_members:
                msg = f"{spec.name}.{name} is both generated and written in {spec.base}"
                raise SystemExit(msg)
            out += self.method(spec, defs, imports)
        wanted = set(spec.wrap or ()) | set(spec.passthrough) | set(spec.wrapped)
        if missing := sorted(wanted - seen):
            msg = f"{spec.source} has no {missing}"
            raise SystemExit(msg)
        if spec.wrap is None:
            public = {n for n in groups if not n.startswith("_")}
            stray = public - seen - set(spec.omit) - base_members
            if stray:
                msg = f"{spec.source} members the facade does not handle: {sorted(stray)}"
                raise SystemExit(msg)
        return "\n".join(out)

    def method(
        self,
        spec: Facade,
        defs: list[ast.FunctionDef | ast.AsyncFunctionDef],
        imports: _Imports,
    ) -> list[str]:
        lines: list[str] = []
        impl = defs[-1]
        is_property = any(ast.unparse(d) == "property" for d in impl.decorator_list)
        coroutine = isinstance(impl, ast.AsyncFunctionDef)
        if not coroutine and spec.wrap is not None and impl.name not in spec.passthrough:
            msg = f"{spec.source}.{impl.name} is not a coroutine: list it as a pass-through"
            raise SystemExit(msg)
        if not coroutine and impl.name not in {*spec.passthrough, *spec.wrapped}:
            msg = f"{spec.source}.{impl.name} is not a coroutine: pass it through or omit it"
            raise SystemExit(msg)
        for fn in defs:
            decorators = [ast.unparse(d) for d in fn.decorator_list]
            for d in decorators:
                if d not in {"overload", "property"}:
                    msg = f"{spec.source}.{fn.name}: decorator {d!r} is not supported"
                    raise SystemExit(msg)
                self.need(imports, {"overload"} if d == "overload" else set(), True)
            wrapper = spec.wrapped.get(fn.name)
            if wrapper is not None:  # a generated class of this module
                fn.returns = ast.Name(wrapper)
            annotations: set[str] = _names(fn.returns) - set(spec.wrapped.values())
            defaults: set[str] = set()
            for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
                annotations |= _names(a.annotation)
            for a in (fn.args.vararg, fn.args.kwarg):
                if a is not None:
                    annotations |= _names(a.annotation)
            for d in [*fn.args.defaults, *fn.args.kw_defaults]:
                if d is not None:  # a value, not an annotation: strings are strings
                    defaults |= {n.id for n in ast.walk(d) if isinstance(n, ast.Name)}
            self.need(imports, annotations, False)
            self.need(imports, defaults, True)
            returns = f" -> {ast.unparse(fn.returns)}" if fn.returns else ""
            head = [f"    @{d}" for d in decorators]
            if wrapper is not None and is_property:
                # One blocking view per facade, as the async core keeps one engine.
                head = ["    @cached_property"]
                self.runtime.add("from functools import cached_property")
            signature = f"    def {fn.name}({ast.unparse(fn.args)}){returns}:"
            if "overload" in decorators:
                lines += [*head, signature + " ...", ""]
                continue
            kind = "attr" if is_property else "meth"
            summary = _summary(fn)
            see = (
                f"Runs on the server (see :meth:`{spec.source}.{fn.name}`)."
                if spec.remote
                else f"See :{kind}:`{spec.source}.{fn.name}`."
            )
            text = textwrap.wrap(summary, width=88) + ([""] if summary else []) + [see]
            doc = "\n        ".join(text) + "\n        "
            if spec.remote:
                operation = spec.ops.get(fn.name, fn.name)
                kwargs = ", ".join(
                    f"{a.arg}={a.arg}"
                    for a in [*fn.args.posonlyargs, *fn.args.args[1:], *fn.args.kwonlyargs]
                )
                sent = f'await self._op("{operation}", {kwargs})'
                # _op decodes the answer into this return type (through the operation table).
                self.runtime.add("from typing import cast")
                call = f'cast("{ast.unparse(fn.returns)}", {sent})' if fn.returns else sent
                lines += [*head, "    async " + signature[4:], f'        """{doc}"""']
                lines += [f"        return {call}", ""]
                continue
            call = f"self.{spec.core}.{fn.name}"
            if not is_property:
                call += f"({_call_args(fn.args)})"
            if coroutine:
                call = f"self._run({call})"
            if wrapper is not None:
                call = f"{wrapper}({call}, self._run)"
            body = [f"        return {call}"]
            if len(defs) > 1 and fn.returns is not None:
                # mypy cannot pick one overload of the core from the union this signature
                # takes; the core returns what its overloads say, which is this method's own.
                self.runtime |= {"from typing import Any", "from typing import cast"}
                body = [
                    f"        done: Any = {call}",
                    f'        return cast("{ast.unparse(fn.returns)}", done)',
                ]
            lines += [*head, signature, f'        """{doc}"""', *body, ""]
        return lines


def _base_members(base: str, src: Path, module: str) -> set[str]:
    path = _module_file(module, src)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == base)
    return {
        n.name
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not n.name.startswith("_")
    }


def render(src: Path = SRC) -> str:
    """The blocking facades' module text for the sources under ``src``, formatted by ruff."""
    gen = _Generator(src)
    classes = [gen.facade(spec) for spec in FACADES]
    bases = ", ".join(spec.base for spec in FACADES)
    gen.runtime.add(f"from memvault.memory._sync_base import {bases}")
    return _module(gen, HEADER, classes, [spec.name for spec in FACADES], TARGET)


def render_remote(src: Path = SRC) -> str:
    """The remote client's module text for the sources under ``src``, formatted by ruff."""
    gen = _Generator(src)
    classes = [gen.facade(REMOTE)]
    gen.runtime |= {
        "from memvault._remote import API_KEY_ENV, RemoteBase",
        "from memvault.memory import register_remote",
    }
    footer = "\n\nregister_remote(RemoteAsyncMemory)\n"
    text = _module(gen, REMOTE_HEADER, classes, ["API_KEY_ENV", REMOTE.name], REMOTE_TARGET, footer)
    return text


def _module(
    gen: _Generator,
    header: str,
    classes: list[str],
    exported: list[str],
    target: Path,
    footer: str = "",
) -> str:
    runtime = sorted(gen.runtime)
    typing_only = sorted(gen.typing - gen.runtime)
    parts = [header, "from __future__ import annotations", "", *runtime]
    if typing_only:
        parts.append("from typing import TYPE_CHECKING")
        parts += ["", "if TYPE_CHECKING:", *[f"    {line}" for line in typing_only]]
    names = ", ".join(f'"{name}"' for name in exported)
    parts += ["", f"__all__ = [{names}]", "", "", *["\n\n".join(classes)]]
    text = "\n".join(parts) + "\n" + footer
    return _ruff(text, target)


def _ruff(text: str, target: Path) -> str:
    ruff = [sys.executable, "-m", "ruff"]
    name = ["--stdin-filename", str(target)]
    fixed = subprocess.run(
        [*ruff, "check", "--fix", "--select", "I,F401", "--quiet", *name, "-"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    ).stdout
    return subprocess.run(
        [*ruff, "format", *name, "-"],
        input=fixed or text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if a checked-in file is stale")
    args = ap.parse_args(argv)
    stale = 0
    for target, text in ((TARGET, render()), (REMOTE_TARGET, render_remote())):
        name = target.relative_to(ROOT)
        if args.check:
            if target.read_text(encoding="utf-8") != text:
                print(f"{name} is stale: run python scripts/generate_sync.py")
                stale = 1
            continue
        target.write_text(text, encoding="utf-8")
        print(f"wrote {name}")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())

"""Runs README.md's code blocks, section by section; ``test_readme.py`` holds the tests.

The rules (also the contract for whoever adds a README section):

* Blocks are the fenced ones, grouped by their ``##`` section, and run in document order. Each
  section starts afresh: its own empty working directory (the cwd of every block), its own
  ``HOME`` (so ``~/.memvault/memvault.db``, the default store, is private to the section), no
  ``MEMVAULT_*`` variable of the machine except ``MEMVAULT_CACHE_DIR`` (pointed at the real model
  cache so the ONNX graph is not rebuilt), and the virtual environment's ``bin`` first on
  ``PATH`` (``memvault``, ``python``).
* ```python blocks of a section run in one interpreter, one namespace, in order: a later block
  may use what an earlier block of the same section defined, never what another section did.
  They run as a script would (no top-level ``await``: use ``asyncio.run``).
* ```bash blocks run under ``bash -euo pipefail`` (any failing command fails the block);
  variables a block ``export``s reach the later blocks (bash and python) of its section.
  ``memvault`` is the real console script, except that a ``serve`` line starts the server in the
  background and returns once ``/health`` answers (it runs until the section ends), and an
  ``mcp`` line is driven by a client that initialises a session and lists the tools (see
  ``_cli_shim.py``). ``curl`` gets ``--fail-with-body``: an HTTP error fails the block.
  The port ``8765`` anywhere in a section is replaced by a free port picked for the section.
* Lines starting with a prefix of :data:`SETUP_SKIPPED` are not run (set-up that builds the
  environment the test runs in); lines starting with a prefix of :data:`CHECK_ONLY` are only
  checked: the command's ``--help`` must list every option the line uses. Each entry says why.
* ```yaml blocks are written to the section's ``./memvault.yaml`` (later blocks of the section
  read it, as they would for a user) and must load with ``memvault.config.load_config``.
* ```text blocks are illustrative output and are not run. Any other language (or none) is an
  error: say what the block is.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
README = REPO / "README.md"
WORKER = HERE / "_python_worker.py"
SHIM = HERE / "_cli_shim.py"

README_PORT = "8765"

RUN = {"python", "bash", "yaml"}
SKIPPED_LANGUAGES = {"text"}

# Set-up lines: they build the environment this test already runs in.
SETUP_SKIPPED: dict[str, str] = {
    "make demo": "creates .venv and runs examples/demo.py: the environment this test runs in",
    "make test": "runs the suite this test is part of (recursion)",
    "pip install": "installs into the environment this test already runs in (needs the network)",
    "git clone": "needs the network; the test runs inside the clone",
}

# Lines whose options are checked against --help instead of being run.
CHECK_ONLY: dict[str, str] = {
    "memvault bench ": "needs the LoCoMo / LongMemEval files, which are not shipped (licence)",
    "python benchmarks/": (
        "minutes of load at the documented sizes; tests/bench and tests/cli run them small"
    ),
}

# Variables bash sets by itself: not exports of a block.
_SHELL_OWN = {"_", "OLDPWD", "PWD", "SHLVL"}

PYTHON_TIMEOUT = 180
BASH_TIMEOUT = 240


@dataclass(frozen=True)
class Block:
    """One fenced block: its section, language, code and the README line its code starts on."""

    section: str
    lang: str
    source: str
    line: int

    @property
    def where(self) -> str:
        return f"README.md line {self.line} ({self.section}, {self.lang or 'no language'})"


def parse_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` with the ``##`` section it is in."""
    blocks: list[Block] = []
    section = "(top)"
    fence: str | None = None
    lang = ""
    start = 0
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is None:
            match = re.match(r"^(`{3,}|~{3,})\s*([\w+-]*)", line)
            if match:
                fence, lang, start, body = match.group(1), match.group(2).lower(), number + 1, []
            elif line.startswith("## "):
                section = line[3:].strip()
            continue
        if line.strip() == fence:
            blocks.append(Block(section, lang, "\n".join(body) + "\n", start))
            fence = None
        else:
            body.append(line)
    if fence is not None:
        raise AssertionError(f"README.md line {start - 1}: a code fence is never closed")
    return blocks


def by_section(blocks: list[Block]) -> dict[str, list[Block]]:
    sections: dict[str, list[Block]] = {}
    for block in blocks:
        sections.setdefault(block.section, []).append(block)
    return sections


def logical_lines(source: str) -> list[str]:
    """Shell lines with backslash continuations joined (the text kept as written)."""
    lines: list[str] = []
    pending = ""
    for line in source.splitlines():
        pending += line
        if line.endswith("\\"):
            pending += "\n"
            continue
        lines.append(pending)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


@dataclass
class BashPlan:
    """What of a bash block runs: the script, the set-up lines skipped, the --help checks."""

    script: str
    skipped: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)


def plan_bash(source: str) -> BashPlan:
    kept: list[str] = []
    plan = BashPlan(script="")
    for line in logical_lines(source):
        command = line.strip()
        if any(command.startswith(p) for p in SETUP_SKIPPED):
            plan.skipped.append(command)
            kept.append(": skipped set-up line")
        elif any(command.startswith(p) for p in CHECK_ONLY):
            plan.checks.append(command)
            kept.append(": checked against --help")
        else:
            kept.append(line)
    plan.script = "\n".join(kept) + "\n"
    return plan


def options_used(command: str) -> tuple[list[str], list[str]]:
    """The command words before the first option, and every ``--option`` of the line."""
    words = shlex.split(command, comments=True)
    head: list[str] = []
    for word in words:
        if word.startswith("-"):
            break
        head.append(word)
    options = [w.split("=", 1)[0] for w in words if w.startswith("--")]
    return head, options


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def model_cache_dir() -> str:
    """The model cache of this machine (computed before HOME is moved)."""
    from memvault.embeddings.minilm_onnx import default_cache_dir

    return os.environ.get("MEMVAULT_CACHE_DIR") or str(default_cache_dir())


class SectionRunner:
    """Runs one section's blocks in its own directory, HOME and environment."""

    def __init__(self, root: Path, *, readme: Path = README) -> None:
        self.readme = readme
        self.work = root / "work"
        self.home = root / "home"
        self.state = root / "state"
        for path in (self.work, self.home, self.state):
            path.mkdir(parents=True, exist_ok=True)
        self.port = str(free_port())
        self.log = self.state / "section.log"
        bin_dir = str(Path(sys.executable).parent)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
        env.update(
            HOME=str(self.home),
            MEMVAULT_CACHE_DIR=model_cache_dir(),
            PATH=bin_dir + os.pathsep + env.get("PATH", ""),
            MV_MEMVAULT=str(Path(bin_dir) / "memvault"),
            MV_STATE=str(self.state),
            MV_SHIM=str(SHIM),
            MV_PYTHON=sys.executable,
            NO_COLOR="1",
        )
        env.pop("PYTHONPATH", None)
        self.env = env
        self.exported: dict[str, str] = {}
        self._worker: subprocess.Popen[str] | None = None

    # -- helpers --------------------------------------------------------------------------------

    def _source(self, block: Block) -> str:
        return re.sub(rf"\b{README_PORT}\b", self.port, block.source)

    def _tail(self, limit: int = 4000) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-limit:]

    def _fail(self, block: Block, problem: str) -> None:
        raise AssertionError(f"{block.where}: {problem}\n--- output ---\n{self._tail()}")

    # -- python ---------------------------------------------------------------------------------

    def _python(self) -> subprocess.Popen[str]:
        if self._worker is None:
            log = self.log.open("a")
            self._worker = subprocess.Popen(
                [sys.executable, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=self.work,
                env=self.env,
            )
            log.close()
        return self._worker

    def run_python(self, block: Block) -> None:
        worker = self._python()
        assert worker.stdin is not None and worker.stdout is not None
        request = {
            "source": self._source(block),
            "file": str(self.readme),
            "line": block.line,
            "env": self.exported,
        }
        worker.stdin.write(json.dumps(request) + "\n")
        worker.stdin.flush()
        timer = threading.Timer(PYTHON_TIMEOUT, worker.kill)
        timer.start()
        try:
            raw = worker.stdout.readline()
        finally:
            timer.cancel()
        if not raw:
            self._fail(block, f"the interpreter died or ran over {PYTHON_TIMEOUT} s")
        answer = json.loads(raw)
        if not answer["ok"]:
            self._fail(block, "raised\n" + answer["error"])

    # -- bash -----------------------------------------------------------------------------------

    def run_bash(self, block: Block) -> BashPlan:
        plan = plan_bash(self._source(block))
        env_out = self.state / "env.out"
        env_out.unlink(missing_ok=True)
        prelude = [
            "set -euo pipefail",
            'memvault() { "$MV_PYTHON" "$MV_SHIM" "$@"; }',
        ]
        if shutil.which("curl", path=self.env["PATH"]):
            prelude.append('curl() { command curl --fail-with-body -sS "$@"; }')
        else:
            prelude.append('curl() { "$MV_PYTHON" "$MV_SHIM" --curl "$@"; }')
        script = "\n".join(prelude) + "\n" + plan.script + f'env -0 > "{env_out}"\n'
        with self.log.open("a") as log:
            log.write(f"\n$ # {block.where}\n{plan.script}")
            log.flush()
            try:
                done = subprocess.run(
                    ["bash", "-c", script],
                    cwd=self.work,
                    env={**self.env, **self.exported},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=BASH_TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                self._fail(block, f"ran over {BASH_TIMEOUT} s")
        if done.returncode != 0:
            self._fail(block, f"exited {done.returncode}")
        before = {**self.env, **self.exported}
        for item in env_out.read_text().split("\0"):
            name, sep, value = item.partition("=")
            if sep and before.get(name) != value and name not in _SHELL_OWN:
                self.exported[name] = value
        for command in plan.checks:
            self.check_help(block, command)
        return plan

    def check_help(self, block: Block, command: str) -> None:
        if re.search(r"\[-", command):
            self._fail(block, f"`{command}`: [--option] is not shell; write the line as it runs")
        head, options = options_used(command)
        done = subprocess.run(
            [*head, "--help"],
            cwd=REPO,
            env={**self.env, **self.exported},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            self._fail(block, f"`{' '.join(head)} --help` exited {done.returncode}: {done.stderr}")
        missing = [o for o in options if o not in done.stdout]
        if missing:
            self._fail(block, f"`{command}`: {', '.join(missing)} not in its --help")

    # -- yaml -----------------------------------------------------------------------------------

    def check_yaml(self, block: Block) -> None:
        # Written where a user puts it (./memvault.yaml, which later blocks of the section then
        # read too) and loaded by memvault itself, in the section's environment.
        (self.work / "memvault.yaml").write_text(self._source(block), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-c", "from memvault.config import load_config; load_config()"],
            cwd=self.work,
            env={**self.env, **self.exported},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            self._fail(block, f"is not a valid memvault.yaml:\n{done.stderr[-2000:]}")

    # -- a section --------------------------------------------------------------------------------

    def run(self, block: Block) -> None:
        if block.lang == "python":
            self.run_python(block)
        elif block.lang == "bash":
            self.run_bash(block)
        elif block.lang == "yaml":
            self.check_yaml(block)
        elif block.lang not in SKIPPED_LANGUAGES:
            raise AssertionError(
                f"{block.where}: say what the block is: ```python, ```bash or ```yaml (run), "
                "or ```text (illustrative output, not run)"
            )

    def close(self) -> None:
        from _cli_shim import stop_servers

        stop_servers(self.state)
        if self._worker is not None:
            if self._worker.stdin is not None:
                self._worker.stdin.close()
            try:
                self._worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._worker.kill()
                self._worker.wait()
            if self._worker.stdout is not None:
                self._worker.stdout.close()

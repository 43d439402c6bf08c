"""``memvault`` as the README's bash blocks see it (see readme_harness for the rules).

Every command runs the real console script with the arguments as written, except the two that
serve until they are stopped:

* ``memvault ... serve ...`` starts the server in the background, waits until ``/health``
  answers on its ``--port`` (which the README must name), and returns; the server keeps running
  until the section ends (a later ``serve`` line of the section replaces it).
* ``memvault ... mcp ...`` is started with a client on its stdin that initialises an MCP session
  and lists the tools; it must answer both and exit 0 when stdin closes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_GLOBAL_WITH_VALUE = {"--db", "--config", "--api-key"}


def _subcommand(args: list[str]) -> str | None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _GLOBAL_WITH_VALUE:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return arg
    return None


def _option(args: list[str], name: str, default: str | None = None) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def stop_servers(state: Path) -> None:
    """Stop every server the section's serve lines started (SIGTERM, then SIGKILL)."""
    pids = state / "servers"
    if not pids.exists():
        return
    for line in pids.read_text().split():
        try:
            os.killpg(int(line), signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(100):
            try:
                os.killpg(int(line), 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            os.killpg(int(line), signal.SIGKILL)
    pids.unlink()


def _serve(exe: str, args: list[str], state: Path) -> int:
    port = _option(args, "--port")
    if port is None:
        print("readme: a serve line must name --port 8765 (mapped to a free port)", file=sys.stderr)
        return 1
    host = _option(args, "--host", "127.0.0.1") or "127.0.0.1"
    stop_servers(state)
    log = (state / f"serve-{port}.log").open("ab")
    proc = subprocess.Popen(
        [exe, *args], stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
    )
    with (state / "servers").open("a") as pids:
        pids.write(f"{proc.pid}\n")
    import httpx  # here, not at the top: every other memvault line starts faster

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            print(f"readme: serve exited with {proc.returncode}", file=sys.stderr)
            sys.stderr.write((state / f"serve-{port}.log").read_text(errors="replace")[-3000:])
            return 1
        try:
            if httpx.get(f"http://{host}:{port}/health", timeout=2).status_code == 200:
                print(f"readme: server up on {host}:{port} (pid {proc.pid})", file=sys.stderr)
                return 0
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    print("readme: the server did not answer /health within 120 s", file=sys.stderr)
    return 1


def _mcp(exe: str, args: list[str]) -> int:
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "readme-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    with subprocess.Popen(
        [exe, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        watchdog = threading.Timer(120, proc.kill)
        watchdog.start()
        try:
            proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            proc.stdin.flush()
            replies = [json.loads(proc.stdout.readline() or "null") for _ in range(2)]
            proc.stdin.close()
            code = proc.wait(timeout=60)
        finally:
            watchdog.cancel()
    tools = [t["name"] for t in ((replies[1] or {}).get("result") or {}).get("tools", [])]
    if code != 0 or not tools:
        print(f"readme: mcp exited {code}, replies {replies}", file=sys.stderr)
        return 1
    print(f"readme: MCP session initialised, tools: {', '.join(tools)}", file=sys.stderr)
    return 0


def _curl(args: list[str]) -> int:
    """The few curl options the README uses, for machines without curl (HTTP errors fail)."""
    headers: dict[str, str] = {}
    data: str | None = None
    method: str | None = None
    url: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in {"-H", "--header"}:
            name, _, value = args[i + 1].partition(":")
            headers[name.strip()] = value.strip()
            i += 2
        elif arg in {"-d", "--data", "--data-raw"}:
            data = args[i + 1]
            i += 2
        elif arg in {"-X", "--request"}:
            method = args[i + 1]
            i += 2
        elif arg.startswith("-"):
            i += 1  # -s, -S, --fail-with-body ...: the shim is always quiet and strict
        else:
            url = arg if "://" in arg else "http://" + arg
            i += 1
    if url is None:
        print("curl shim: no URL", file=sys.stderr)
        return 2
    import httpx

    verb = method or ("POST" if data is not None else "GET")
    response = httpx.request(verb, url, headers=headers, content=data, timeout=60)
    sys.stdout.write(response.text)
    return 22 if response.status_code >= 400 else 0


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--curl"]:
        return _curl(args[1:])
    exe = os.environ["MV_MEMVAULT"]
    command = _subcommand(args)
    if command == "serve":
        return _serve(exe, args, Path(os.environ["MV_STATE"]))
    if command == "mcp":
        return _mcp(exe, args)
    os.execv(exe, [exe, *args])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())

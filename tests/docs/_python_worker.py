"""Runs the ```python blocks of one README section in one interpreter (see readme_harness).

Reads one JSON request a line on stdin: ``{"source", "file", "line", "env"}``. Each block is
executed in the same ``__main__``-like namespace, compiled so that tracebacks name the README
and its real line numbers. What the blocks print goes to stderr (the section's log); the one
JSON answer per request (``{"ok": true}`` or ``{"ok": false, "error": traceback}``) goes to
the original stdout, which nothing else writes to.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # prints of the blocks (and of C code) land in the log, not in the protocol
    namespace: dict[str, object] = {"__name__": "__main__"}
    for raw in sys.stdin:
        request = json.loads(raw)
        os.environ.update(request["env"])
        padded = "\n" * (request["line"] - 1) + request["source"]
        try:
            code = compile(padded, request["file"], "exec")
            exec(code, namespace)
            answer: dict[str, object] = {"ok": True}
        except BaseException:
            answer = {"ok": False, "error": traceback.format_exc()}
        sys.stdout.flush()
        sys.stderr.flush()
        answers.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()

"""A run killed mid-way (SIGKILL) is found by its stale heartbeat, parked, and resumed.

A child process runs an eight-step LangGraph graph with memvault's checkpointer over a SQLite
file, beating a heartbeat after every step; the parent kills it after three steps, finds the
run through ``heartbeats.stale``, parks it, and a resumer that ``take``s the parked context
continues the graph from its last checkpoint to the end: every step ran, none twice in the
final state, and only the step in flight at the kill may have started twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

from memvault.persistence import create_persistence
from memvault.persistence import models as pm

STEPS = 8

GRAPH = textwrap.dedent(
    """
    import asyncio, operator, sys, time
    from typing import Annotated, TypedDict
    from langgraph.graph import END, START, StateGraph
    from memvault.integrations.langgraph_checkpoint import MemvaultCheckpointSaver
    from memvault.persistence import create_persistence
    from memvault.persistence import models as pm

    class State(TypedDict):
        steps: Annotated[list[int], operator.add]

    def build(db, execution, pause):
        ops = create_persistence(url=db)

        def step(n):
            def run(state):
                print(f"start {n}", flush=True)
                time.sleep(pause)
                # The heartbeat says where the run is; the checkpoint after this node is what
                # a resume continues from.
                asyncio.run(ops.heartbeats.beat(pm.Heartbeat(
                    execution_id=execution, agent_id="worker-1", progress={"step": n})))
                print(f"done {n}", flush=True)
                return {"steps": [n]}
            return run

        builder = StateGraph(State)
        for n in range(STEPS):
            builder.add_node(f"s{n}", step(n))
            builder.add_edge(START if n == 0 else f"s{n - 1}", f"s{n}")
        builder.add_edge(f"s{STEPS - 1}", END)
        return builder.compile(checkpointer=MemvaultCheckpointSaver.from_url(db))
    """
)


def _child(db: Path, tmp: Path) -> subprocess.Popen[str]:
    (tmp / "crash_graph.py").write_text(f"STEPS = {STEPS}\n" + GRAPH)
    script = tmp / "child.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from crash_graph import build
            graph = build({str(db)!r}, "exec-1", 0.3)
            graph.invoke({{"steps": []}}, {{"configurable": {{"thread_id": "exec-1"}}}})
            print("finished", flush=True)
            """
        )
    )
    return subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp), *sys.path])},
    )


def test_a_killed_run_is_found_parked_and_resumed_from_its_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    child = _child(db, tmp_path)
    seen: list[str] = []
    assert child.stdout is not None
    for line in child.stdout:
        seen.append(line.strip())
        if line.strip() == "done 2":
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert "finished" not in seen

    async def find_and_park() -> pm.ParkedContext:
        async with create_persistence(url=str(db)) as ops:
            beat = await ops.heartbeats.get("exec-1")
            assert beat is not None and beat.progress["step"] >= 2
            stale = await ops.heartbeats.stale(
                timedelta(0), now=beat.beat_at + timedelta(seconds=1)
            )
            assert [h.execution_id for h in stale] == ["exec-1"]
            parked = pm.ParkedContext(
                execution_id="exec-1",
                agent_id=beat.agent_id,
                reason="heartbeat stale: worker died",
                state={"thread_id": "exec-1", "last_step": beat.progress["step"]},
            )
            await ops.parked_contexts.save(parked)
            await ops.heartbeats.delete("exec-1")
            taken = await ops.parked_contexts.take(parked.id)
            assert taken == parked
            assert await ops.parked_contexts.take(parked.id) is None  # one resumer only
            return taken

    resume = asyncio.run(find_and_park())
    sys.path.insert(0, str(tmp_path))
    try:
        import crash_graph  # the same graph definition the child ran

        graph = crash_graph.build(str(db), "exec-1", 0.0)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("crash_graph", None)
    config = {"configurable": {"thread_id": resume.state["thread_id"]}}
    before = graph.get_state(config)
    done_before = list(before.values["steps"])
    # "done 2" printed: steps 0 and 1 are checkpointed; step 2 may have died before its own.
    assert done_before == list(range(len(done_before))) and len(done_before) >= 2
    try:
        final = graph.invoke(None, config)
    finally:
        graph.checkpointer.close()
    assert final["steps"] == list(range(STEPS))  # every step once, in order
    started = [int(s.split()[1]) for s in seen if s.startswith("start")]
    # Only a step in flight at the kill (after the last checkpoint) can have started twice.
    assert set(started) - set(done_before) <= {len(done_before)}

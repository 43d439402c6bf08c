"""LangGraph with memvault as its long-term store: a graph that saves a fact and recalls it.

Offline: a SQLite file in a temporary directory and the bundled embedding model; the graph's
nodes are plain functions (no LLM). Needs ``pip install 'memvault[langgraph]'``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memvault import Memory
from memvault.integrations.langgraph import MemvaultStore


class State(TypedDict):
    user: str
    message: str
    answer: str


def remember(state: State, *, store: BaseStore) -> dict[str, str]:
    # Namespace ("<user>", "facts"): the first label is the memvault agent.
    store.put((state["user"], "facts"), "home", {"text": state["message"]})
    return {}


def answer(state: State, *, store: BaseStore) -> dict[str, str]:
    hits = store.search((state["user"], "facts"), query="where does the user live?", limit=1)
    return {"answer": hits[0].value["text"] if hits else "I don't know"}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, Memory(str(Path(tmp) / "graph.db")) as memory:
        builder = StateGraph(State)
        builder.add_node("remember", remember)
        builder.add_node("answer", answer)
        builder.add_edge(START, "remember")
        builder.add_edge("remember", "answer")
        builder.add_edge("answer", END)
        graph = builder.compile(store=MemvaultStore(memory))
        out = graph.invoke({"user": "alice", "message": "Alice lives in Porto", "answer": ""})
        print("answer:", out["answer"])
        print("namespaces:", MemvaultStore(memory).list_namespaces())
        print("memvault agents:", memory.agents())


if __name__ == "__main__":
    main()

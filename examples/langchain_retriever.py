"""LangChain (langchain-core only) with a memvault retriever and memvault chat history.

Offline: the "model" is a RunnableLambda that answers from the retrieved documents. Needs
``pip install 'memvault[langchain]'``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from memvault import Memory
from memvault.integrations.langchain import MemvaultChatMessageHistory, MemvaultRetriever


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "lc.db")
        with Memory(db) as memory:
            memory.add("Refunds are possible within 30 days of purchase.", agent_id="shop")
            memory.add("Shipping to Norway takes five working days.", agent_id="shop")
            retriever = MemvaultRetriever(memory=memory, agent_id="shop", k=1)

            def answer(messages: list[BaseMessage]) -> AIMessage:
                question = str(messages[-1].content)
                docs = retriever.invoke(question)
                return AIMessage(docs[0].page_content if docs else "I don't know.")

            chat = RunnableWithMessageHistory(
                RunnableLambda(answer),
                lambda sid: MemvaultChatMessageHistory(sid, agent_id="shop", store=db),
            )
            config = {"configurable": {"session_id": "customer-9"}}
            reply = chat.invoke([HumanMessage("How long do I have to return it?")], config)  # type: ignore[arg-type]
            print("answer:", reply.content)
            history = MemvaultChatMessageHistory("customer-9", agent_id="shop", store=db)
            print("history:", [m.type for m in history.messages])


if __name__ == "__main__":
    main()

"""A question about what one party said finds that party's turn, end to end: real SQLite file,
real MiniLM model, the default preset, turns stored with ``add_messages`` (roles in metadata)."""

from __future__ import annotations

from pathlib import Path

from memvault import AsyncMemory
from memvault.protocols import Embedder

USER = "We adopted a beagle named Max last weekend."
ASSISTANT = "Congratulations on the adoption! Beagles are a lovely kind of dog for families."
CHAT = [
    {"role": "user", "content": USER},
    {"role": "assistant", "content": ASSISTANT},
    {"role": "user", "content": "Any tips for the first vet visit?"},
    {"role": "assistant", "content": "Bring the adoption papers and any vaccination records."},
]


async def test_each_party_is_found_for_what_it_said(tmp_path: Path, minilm: Embedder) -> None:
    async with AsyncMemory(str(tmp_path / "chat.db"), embedder=minilm) as mem:
        await mem.add_messages(CHAT, agent_id="pet", session_id="s1")
        # The assistant's reply shares more words with the question ("kind of dog", "adoption");
        # the user asks about their own life, which lifts their own turn (before the speaker
        # feature it trailed far behind). Since the static view also counts the reply's shared
        # words, the two are level: both lead, within a few points of relevance of each other.
        mine = await mem.search("What kind of dog did I adopt?", agent_id="pet", limit=2)
        assert {m.content for m in mine} == {USER, ASSISTANT}
        by_text = {m.content: m.relevance_score or 0.0 for m in mine}
        assert abs(by_text[USER] - by_text[ASSISTANT]) < 0.05
        # Asked what the assistant said, the assistant's turn leads.
        yours = await mem.search(
            "Which dogs did you say are good for families?", agent_id="pet", limit=2
        )
        assert yours[0].content == ASSISTANT
        # Asked about the user's life, their turn is several times as relevant as when the
        # question is about what the assistant said.
        theirs = {m.content: m.relevance_score or 0.0 for m in yours}
        assert by_text[USER] > 3 * theirs[USER]

"""The semantic response cache in front of a scripted LLM (and the real bundled embedder)."""

from __future__ import annotations

import asyncio

import pytest

from memvault.errors import MemoryConfigError
from memvault.llm import ProviderError
from memvault.llm.cache import CachingLLM, live_caches, normalise_prompt
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder, LLMProvider


def _ask(text: str, system: str = "You answer briefly.") -> list[ChatMessage]:
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=text)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _numbered() -> ScriptedLLM:
    counter = iter(range(1, 10_000))
    return ScriptedLLM([lambda _m: f"answer {next(counter)}"], repeat_last=True)


async def test_identical_and_normalised_prompts_hit_and_parameters_miss() -> None:
    llm = _numbered()
    cache = CachingLLM(llm)
    assert isinstance(cache, LLMProvider)
    first = await cache.complete(_ask("What is  the capital of France?"))
    again = await cache.complete(_ask("what is the capital   of france?"))
    assert again.text == first.text == "answer 1"
    assert len(llm.calls) == 1
    other = await cache.complete(_ask("What is the capital of France?"), max_tokens=5)
    assert other.text == "answer 2"
    schema = await cache.complete(
        _ask("What is the capital of France?"), json_schema={"type": "object"}
    )
    assert schema.text == "answer 3"
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.size) == (1, 3, 3)
    assert stats.hit_rate == pytest.approx(0.25)
    assert cache in live_caches()


async def test_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    llm = _numbered()
    cache = CachingLLM(llm, ttl_seconds=60, clock=clock)
    await cache.complete(_ask("hello"))
    clock.now += 59
    assert (await cache.complete(_ask("hello"))).text == "answer 1"
    clock.now += 2
    assert (await cache.complete(_ask("hello"))).text == "answer 2"
    assert cache.stats().expired == 1


async def test_invalidation_drops_responses_built_on_changed_memories() -> None:
    llm = _numbered()
    cache = CachingLLM(llm)
    await cache.cached(_ask("summarise m1 and m2"), memory_ids=["m1", "m2"])
    with CachingLLM.using(["m3"]):
        await cache.complete(_ask("summarise m3"))
    await cache.complete(_ask("unrelated"))
    assert cache.invalidate_memories(["m2"]) == 1
    assert (await cache.complete(_ask("summarise m1 and m2"))).text == "answer 4"
    assert (await cache.complete(_ask("summarise m3"))).text == "answer 2"
    assert cache.invalidate_memories(["m3"]) == 1
    assert cache.stats().invalidated == 2


async def test_least_recently_used_entries_are_evicted_beyond_max_entries() -> None:
    cache = CachingLLM(_numbered(), max_entries=2)
    for text in ("a", "b", "a", "c"):
        await cache.complete(_ask(text))
    assert cache.stats().evicted == 1
    assert (await cache.complete(_ask("a"))).text == "answer 1"  # kept: recently used
    assert (await cache.complete(_ask("b"))).text == "answer 4"  # evicted, asked again


async def test_hot_temperatures_bypass_and_errors_are_not_cached() -> None:
    llm = ScriptedLLM([ProviderError("down", retryable=True), "fine", "hot 1", "hot 2"])
    cache = CachingLLM(llm)
    with pytest.raises(ProviderError):
        await cache.complete(_ask("x"))
    assert (await cache.complete(_ask("x"))).text == "fine"
    assert (await cache.complete(_ask("x"), temperature=0.9)).text == "hot 1"
    assert (await cache.complete(_ask("x"), temperature=0.9)).text == "hot 2"
    assert cache.stats().bypassed == 2


async def test_concurrent_identical_requests_are_deduplicated() -> None:
    release = asyncio.Event()
    calls = 0

    class Slow:
        model_id = "slow"

        async def complete(self, messages: object, **_: object) -> object:
            nonlocal calls
            calls += 1
            await release.wait()
            from memvault.models import LLMResponse

            return LLMResponse(text="shared", model="slow")

    cache = CachingLLM(Slow())  # type: ignore[arg-type]
    tasks = [asyncio.create_task(cache.complete(_ask("same"))) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert {r.text for r in await asyncio.gather(*tasks)} == {"shared"}
    assert calls == 1
    assert cache.stats().hits == 4


async def test_semantically_equal_prompts_hit_with_an_embedder(minilm: Embedder) -> None:
    llm = _numbered()
    cache = CachingLLM(llm, embedder=minilm, similarity_threshold=0.9)
    await cache.complete(_ask("What is the capital city of France?"))
    near = await cache.complete(_ask("What's the capital city of France?"))
    assert near.text == "answer 1"
    far = await cache.complete(_ask("How do I bake sourdough bread?"))
    assert far.text == "answer 2"
    # The same question under another system prompt is another request.
    other = await cache.complete(_ask("What is the capital city of France?", system="Be verbose."))
    assert other.text == "answer 3"
    assert cache.stats().semantic_hits == 1


async def test_hit_rate_on_a_repeated_workload(minilm: Embedder) -> None:
    """A consolidation-like workload: 20 distinct prompts, each asked five times."""
    llm = _numbered()
    cache = CachingLLM(llm, embedder=minilm)
    prompts = [f"Extract the facts of episode {i}: the user deployed build {i}." for i in range(20)]
    for _ in range(5):
        for prompt in prompts:
            await cache.complete(_ask(prompt))
    stats = cache.stats()
    assert len(llm.calls) == 20
    assert stats.hit_rate == pytest.approx(0.8)


def test_normalise_prompt_and_bad_settings() -> None:
    assert (
        normalise_prompt([ChatMessage(role="user", content="  Hi\n  THERE ")]) == "user: hi there"
    )
    with pytest.raises(MemoryConfigError, match="ttl_seconds"):
        CachingLLM(_numbered(), ttl_seconds=0)

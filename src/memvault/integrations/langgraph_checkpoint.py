"""A LangGraph checkpointer on memvault's operational records: :class:`MemvaultCheckpointSaver`.

Install with ``pip install 'memvault[langgraph]'``. Hand it to ``graph.compile(checkpointer=...)``
and every super-step's checkpoint, and every task's pending writes, lands in the ``checkpoints``
repository of a :class:`~memvault.persistence.PersistenceBackend`: the same SQLite file or
PostgreSQL schema as the memories (``ops_checkpoints``, ``ops_checkpoint_writes``). A graph
interrupted (``interrupt()``, a crash, a restart) resumes from the store with a new saver and a
new process::

    saver = MemvaultCheckpointSaver.from_url("memvault.db")
    graph = builder.compile(checkpointer=saver)
    graph.invoke(inputs, {"configurable": {"thread_id": "run-42"}})

What is stored: the checkpoint and its metadata as LangGraph's serializer (``self.serde``) makes
them, with their type tags, never interpreted; each write with its channel, index and task
path. Writes to LangGraph's special channels (errors, interrupts) replace an earlier one of the
same task; other writes already stored are kept, as ``InMemorySaver`` does.

The sync and async methods both work: every store call runs on one private event loop in a
background thread (so a PostgreSQL pool is used from the loop it was opened on, and a sync call
made while another loop runs in the calling thread does not deadlock). Close the saver with
:meth:`close` to release the store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from memvault.integrations._common import require

require("langgraph.checkpoint.base", "langgraph")

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.base import (  # noqa: E402
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.base import Checkpoint as LGCheckpoint  # noqa: E402

from memvault.persistence import PersistenceBackend, create_persistence  # noqa: E402
from memvault.persistence import models as pm  # noqa: E402

__all__ = ["MemvaultCheckpointSaver"]

T = TypeVar("T")


class _Loop:
    """One event loop in a daemon thread; coroutines submitted from any thread run on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="memvault-checkpointer", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class MemvaultCheckpointSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints in a memvault operational store (see the module docstring).

    Args:
        backend: the store; the saver connects it and closes it in :meth:`close`. It is used
            from the saver's own loop only, so give it a backend no other code uses (or build
            one with :meth:`from_url`).
    """

    def __init__(self, backend: PersistenceBackend, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ops = backend
        self._loop = _Loop()
        self._closed = False
        self._loop.run(backend.connect())

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> MemvaultCheckpointSaver:
        """A saver over the operational store at ``url`` (a SQLite path or ``postgresql://``)."""
        return cls(create_persistence(url=url), **kwargs)

    def close(self) -> None:
        """Close the store and stop the saver's loop (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run(self._ops.disconnect())
        finally:
            self._loop.stop()

    def __enter__(self) -> MemvaultCheckpointSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the async implementation (run on the saver's loop) -----------------------------------

    def _tuple(self, saved: pm.Checkpoint, writes: Sequence[pm.CheckpointWrite]) -> CheckpointTuple:
        config: RunnableConfig = {
            "configurable": {
                "thread_id": saved.thread_id,
                "checkpoint_ns": saved.checkpoint_ns,
                "checkpoint_id": saved.checkpoint_id,
            }
        }
        parent: RunnableConfig | None = None
        if saved.parent_checkpoint_id:
            parent = {
                "configurable": {
                    "thread_id": saved.thread_id,
                    "checkpoint_ns": saved.checkpoint_ns,
                    "checkpoint_id": saved.parent_checkpoint_id,
                }
            }
        return CheckpointTuple(
            config=config,
            checkpoint=self.serde.loads_typed((saved.type, saved.data)),
            metadata=self.serde.loads_typed((saved.metadata_type or "json", saved.metadata)),
            parent_config=parent,
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.type, w.data))) for w in writes
            ],
        )

    async def _get(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        ns = str(conf.get("checkpoint_ns", ""))
        saved = await self._ops.checkpoints.get(thread_id, ns, get_checkpoint_id(config))
        if saved is None:
            return None
        writes = await self._ops.checkpoints.writes(thread_id, ns, saved.checkpoint_id)
        return self._tuple(saved, writes)

    async def _list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> list[CheckpointTuple]:
        conf = config["configurable"] if config else {}
        thread_id = conf.get("thread_id")
        wanted_id = get_checkpoint_id(config) if config else None
        found = await self._ops.checkpoints.list_checkpoints(
            None if thread_id is None else str(thread_id),
            checkpoint_ns=conf.get("checkpoint_ns"),
            before=get_checkpoint_id(before) if before else None,
        )
        out: list[CheckpointTuple] = []
        for saved in found:
            if wanted_id and saved.checkpoint_id != wanted_id:
                continue
            if filter:
                meta = self.serde.loads_typed((saved.metadata_type or "json", saved.metadata))
                if not all(meta.get(k) == v for k, v in filter.items()):
                    continue
            if limit is not None and len(out) >= limit:
                break
            writes = await self._ops.checkpoints.writes(
                saved.thread_id, saved.checkpoint_ns, saved.checkpoint_id
            )
            out.append(self._tuple(saved, writes))
        return out

    async def _put(
        self, config: RunnableConfig, checkpoint: LGCheckpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        ns = str(conf.get("checkpoint_ns", ""))
        kind, data = self.serde.dumps_typed(checkpoint)
        meta_kind, meta = self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))
        await self._ops.checkpoints.save(
            pm.Checkpoint(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint["id"],
                parent_checkpoint_id=conf.get("checkpoint_id"),
                type=kind,
                data=data,
                metadata_type=meta_kind,
                metadata=meta,
            )
        )
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        conf = config["configurable"]
        special: list[pm.CheckpointWrite] = []
        regular: list[pm.CheckpointWrite] = []
        for idx, (channel, value) in enumerate(writes):
            kind, data = self.serde.dumps_typed(value)
            index = WRITES_IDX_MAP.get(channel, idx)
            record = pm.CheckpointWrite(
                thread_id=str(conf["thread_id"]),
                checkpoint_ns=str(conf.get("checkpoint_ns", "")),
                checkpoint_id=str(conf["checkpoint_id"]),
                task_id=task_id,
                idx=index,
                channel=channel,
                type=kind,
                data=data,
                task_path=task_path,
            )
            (special if index < 0 else regular).append(record)
        if special:
            await self._ops.checkpoints.put_writes(special, replace=True)
        if regular:
            await self._ops.checkpoints.put_writes(regular, replace=False)

    # -- BaseCheckpointSaver, sync -------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names (its ``checkpoint_id``, else the thread's latest)."""
        return self._loop.run(self._get(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints, newest first (of the config's thread and namespace, when given)."""
        yield from self._loop.run(self._list(config, filter, before, limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: LGCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint; the config that names it."""
        return self._loop.run(self._put(config, checkpoint, metadata))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes towards the next checkpoint."""
        self._loop.run(self._put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread."""
        self._loop.run(self._ops.checkpoints.delete_thread(thread_id))

    # -- BaseCheckpointSaver, async ------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple`, awaitable."""
        return await self._loop.arun(self._get(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list`, as an async iterator."""
        for item in await self._loop.arun(self._list(config, filter, before, limit)):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: LGCheckpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put`, awaitable."""
        return await self._loop.arun(self._put(config, checkpoint, metadata))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`put_writes`, awaitable."""
        await self._loop.arun(self._put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread`, awaitable."""
        await self._loop.arun(self._ops.checkpoints.delete_thread(thread_id))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The next channel version: a zero-padded counter and a random tiebreak, as
        ``InMemorySaver`` makes them (ordered as strings)."""
        import random

        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

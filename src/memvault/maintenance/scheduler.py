"""The maintenance scheduler: consolidation, retention sweeps and the skill evolver, when due.

One *pass* over a store:

1. take the store's lease (:mod:`memvault.maintenance.state`); if another runner holds it,
   the pass is skipped (one runner per store, however many servers share it);
2. for each agent of the store: consolidation when ``options.consolidation_interval`` says it is
   due (it merges only memories older than ``consolidation.min_age_days``, 30 days; a server's
   first pass after it starts runs none), then a retention sweep when
   ``maintenance.sweep_interval`` says so;
3. the skill evolver (org-wide) when ``procedural.evolver.enabled`` and
   ``maintenance.evolver_interval`` is due;
4. release the lease and log one INFO line (what ran, counts, duration).

Due times count from the last *successful* run, kept in the store (so they survive restarts and
are shared by every server on the store). A job that fails is logged and retried at the next
pass; a pass never raises (only cancellation goes through, so a server can stop it), and never
loses data: consolidation stores the new entry before archiving its sources, and sweeps move
entries to the archive, never to nothing.

The clock is a parameter (``now``), so tests drive the schedule with a fake one. A dry run
(``run_pass(dry_run=True)``, ``memvault maintain --dry-run``) plans the due consolidations, its
report listing every memory each new one would merge, and changes nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict

from memvault._ids import utc_now
from memvault.config.maintenance import MaintenanceConfig
from memvault.consolidation.schedule import PERIODIC_INTERVALS, is_due
from memvault.errors import MemoryCapabilityError
from memvault.maintenance.state import MaintenanceState, open_maintenance_state
from memvault.models import ConsolidationInterval

if TYPE_CHECKING:
    from memvault.config import MemvaultConfig
    from memvault.memory import AsyncMemory
    from memvault.service import MemoryService

__all__ = [
    "JOB_CONSOLIDATE",
    "JOB_EVOLVE",
    "JOB_SWEEP",
    "ConsolidationRun",
    "EvolverRun",
    "MaintenanceReport",
    "MaintenanceScheduler",
    "MergeGroup",
    "ServiceMaintenance",
    "SweepRun",
    "memory_store_url",
    "new_holder_id",
]

logger = logging.getLogger("memvault.maintenance")

JOB_CONSOLIDATE = "consolidate"
JOB_SWEEP = "sweep"
JOB_EVOLVE = "evolve"
JOB_FORGET = "forgetting"  # optical forgetting (issue 18), on the sweep interval

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_HELD = "consolidation held until the pass after the server's start"


class MergeGroup(BaseModel):
    """One new memory of a consolidation run: which originals it merges (or would merge).

    ``into`` is the new memory's id (None in a dry run, or when storing it failed).
    """

    model_config = _FROZEN

    category: str
    merged_ids: tuple[str, ...]
    into: str | None = None


class ConsolidationRun(BaseModel):
    """One agent's scheduled consolidation (in a dry run: what it would do)."""

    model_config = _FROZEN

    agent_id: str
    created: int = 0
    archived: int = 0
    marked: int = 0
    groups: tuple[MergeGroup, ...] = ()
    too_young: int = 0
    """Memories left alone for being younger than ``consolidation.min_age_days``."""
    errors: tuple[str, ...] = ()


class SweepRun(BaseModel):
    """One agent's retention sweep: how many entries went to the archive, and why."""

    model_config = _FROZEN

    agent_id: str
    expired: int = 0
    evicted: int = 0


class EvolverRun(BaseModel):
    """The skill evolver's cycle: how many proposals went to the approval queue."""

    model_config = _FROZEN

    emitted: int = 0
    trajectories: int = 0
    error: str | None = None


class MaintenanceReport(BaseModel):
    """What one maintenance pass over a store did.

    ``ran`` is False when another runner held the store's lease (``lease_holder``) or the lease
    could not be taken (``errors``). ``errors`` has one line per job that failed; the pass went
    on with the other jobs.
    """

    model_config = _FROZEN

    location: str
    holder: str
    started_at: AwareDatetime
    duration_s: float = 0.0
    ran: bool = True
    forced: bool = False
    dry_run: bool = False
    lease_holder: str | None = None
    agents: int = 0
    consolidated: tuple[ConsolidationRun, ...] = ()
    swept: tuple[SweepRun, ...] = ()
    evolver: EvolverRun | None = None
    skipped: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line: what ran, the counts and the duration (the pass's log line)."""
        if not self.ran:
            why = (
                f"lease held by {self.lease_holder}"
                if self.lease_holder
                else "; ".join(self.errors) or "not run"
            )
            return f"maintenance {self.location}: skipped ({why})"
        parts = [f"{self.agents} agent(s)"]
        if self.dry_run:
            planned = sum(len(g.merged_ids) for c in self.consolidated for g in c.groups)
            groups = sum(len(c.groups) for c in self.consolidated)
            parts.append(
                f"dry run: consolidation of {len(self.consolidated)} would merge {planned} "
                f"memories into {groups} new"
                if self.consolidated
                else "dry run: consolidation not due"
            )
        else:
            merged = sum(c.archived + c.marked for c in self.consolidated)
            created = sum(c.created for c in self.consolidated)
            if self.consolidated:
                parts.append(
                    f"consolidated {len(self.consolidated)} ({created} new, {merged} merged)"
                )
            elif _HELD not in self.skipped:
                parts.append("consolidation not due")
        expired = sum(s.expired for s in self.swept)
        evicted = sum(s.evicted for s in self.swept)
        parts.append(
            f"swept {len(self.swept)} ({expired} expired, {evicted} evicted)"
            if self.swept
            else "sweep not due"
        )
        if self.evolver is not None:
            parts.append(f"evolver ran ({self.evolver.emitted} proposals)")
        parts.extend(self.skipped)
        if self.errors:
            parts.append(f"{len(self.errors)} error(s): {'; '.join(self.errors)}")
        text = ", ".join(parts)
        return f"maintenance {self.location}: {text} in {self.duration_s:.2f}s"

    def plan_lines(self) -> list[str]:
        """One line per new memory of the pass's consolidations: its originals (and its id).

        In a dry run these are exactly the memories a real pass now would merge.
        """
        lines: list[str] = []
        verb = "would merge" if self.dry_run else "merged"
        for run in self.consolidated:
            for number, group in enumerate(run.groups, 1):
                into = "" if group.into is None else f" into {group.into}"
                ids = ", ".join(group.merged_ids)
                lines.append(
                    f"  {run.agent_id} group {number} ({group.category}): {verb} "
                    f"{len(group.merged_ids)}{into}: {ids}"
                )
            if run.too_young:
                lines.append(
                    f"  {run.agent_id}: {run.too_young} memories younger than the minimum "
                    "age left alone"
                )
        return lines


def new_holder_id() -> str:
    """A lease holder id: host, process and a random part (unique per scheduler)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def memory_store_url(memory: AsyncMemory) -> str | None:
    """The storage URL a memory was opened from (None: a given backend, kept in process).

    The side tables (learning records, maintenance state) live at this URL; the composite
    store keeps them in its default store, as the learning layer does.
    """
    from memvault.config import COMPOSITE_URL

    # The URL the memory opened (the learning layer's URL, which follows the same rule).
    url: str | None = getattr(memory, "_learning_url", None)
    if url == COMPOSITE_URL:
        url = memory.config.composite_default_url()
    return url


def _interval_due(
    interval: ConsolidationInterval, last: datetime | None, now: datetime, *, force: bool
) -> bool:
    """Due by time; event and manual intervals only when forced."""
    if force:
        return interval is not ConsolidationInterval.NEVER
    return interval in PERIODIC_INTERVALS and is_due(interval, last, now)


class MaintenanceScheduler:
    """Runs maintenance passes over one memory's store.

    ``state`` keeps the last-run times and the lease; by default the ``maintenance_runs`` table
    beside the memories (in process for ``memory://`` or a given backend). ``config`` defaults
    to the memory's ``maintenance`` section; ``now`` is the clock (UTC, aware).

    ``first_pass_consolidates`` False (a server's scheduler): the first pass after start runs
    no consolidation, whatever is due; it starts with the next pass. A server that just
    started, maybe on a store it has never seen, first serves and sweeps before it rewrites
    anything. ``memvault maintain`` keeps True: its one pass is the pass asked for.
    """

    def __init__(
        self,
        memory: AsyncMemory,
        state: MaintenanceState | None = None,
        *,
        config: MaintenanceConfig | None = None,
        now: Callable[[], datetime] = utc_now,
        holder: str | None = None,
        first_pass_consolidates: bool = True,
    ) -> None:
        self._memory = memory
        self._owns_state = state is None
        self._state = (
            state if state is not None else open_maintenance_state(memory_store_url(memory))
        )
        self._config = config if config is not None else memory.config.maintenance
        self._now = now
        self._holder = holder or new_holder_id()
        self._lease_until: datetime | None = None
        # The lease keeps other runners out; this keeps this runner's own passes apart (its
        # holder id renews its own lease, so two overlapping passes of it would both run).
        self._running = asyncio.Lock()
        self._hold_consolidation = not first_pass_consolidates
        self._passes = 0

    @property
    def passes(self) -> int:
        """How many passes this scheduler has run (skipped ones, for a held lease, included)."""
        return self._passes

    def __repr__(self) -> str:
        """Show the store and the holder id."""
        return f"MaintenanceScheduler(location={self._state.location!r}, holder={self._holder!r})"

    @property
    def holder(self) -> str:
        """This scheduler's lease holder id."""
        return self._holder

    @property
    def state(self) -> MaintenanceState:
        """Where the last-run times and the lease are kept."""
        return self._state

    @property
    def memory(self) -> AsyncMemory:
        """The memory this scheduler maintains."""
        return self._memory

    @property
    def config(self) -> MaintenanceConfig:
        """The intervals and lease this scheduler runs with."""
        return self._config

    async def tick(self) -> MaintenanceReport:
        """One pass of whatever is due now (see :meth:`run_pass`)."""
        return await self.run_pass()

    async def run_pass(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        """Run the jobs that are due (``force``: every enabled job) and log one line.

        ``dry_run``: only plan the consolidations that are due (the report's groups list every
        memory each would merge) and change nothing: no memory, no sweep, no recorded run.

        Never raises (cancellation aside): failures are logged and listed in ``errors``.
        """
        async with self._running:
            try:
                return await self._pass(force=force, dry_run=dry_run)
            finally:
                self._passes += 1

    async def _pass(self, *, force: bool, dry_run: bool = False) -> MaintenanceReport:
        started = self._now()
        clock = time.perf_counter()
        location = self._state.location
        base: dict[str, Any] = {
            "location": location,
            "holder": self._holder,
            "started_at": started,
            "forced": force,
            "dry_run": dry_run,
        }
        try:
            taken = await self._state.acquire(self._holder, started, self._config.lease_seconds)
        except Exception as exc:  # a broken store must not stop the server's loop
            report = MaintenanceReport(
                **base,
                ran=False,
                errors=(f"lease: {exc}",),
                duration_s=time.perf_counter() - clock,
            )
            logger.warning(report.summary())
            return report
        if not taken:
            other = None
            try:
                lease = await self._state.lease()
                other = None if lease is None else lease.holder
            except Exception:  # only for the message
                other = "another runner"
            report = MaintenanceReport(
                **base,
                ran=False,
                lease_holder=other or "another runner",
                duration_s=time.perf_counter() - clock,
            )
            logger.info(report.summary())
            return report
        self._lease_until = started + timedelta(seconds=self._config.lease_seconds)
        work = _Work()
        try:
            await self._jobs(work, force=force, dry_run=dry_run)
        except _LeaseLost as exc:
            work.errors.append(str(exc))
        except Exception as exc:  # anything unforeseen: logged, the loop goes on
            logger.exception("maintenance pass failed")
            work.errors.append(f"pass: {exc}")
        finally:
            try:
                await self._state.release(self._holder)
            except Exception as exc:
                # The lease then simply expires after lease_seconds.
                work.errors.append(f"lease release: {exc}")
            self._lease_until = None
        report = MaintenanceReport(
            **base,
            agents=work.agents,
            consolidated=tuple(work.consolidated),
            swept=tuple(work.swept),
            evolver=work.evolver,
            skipped=tuple(work.skipped),
            errors=tuple(work.errors),
            duration_s=time.perf_counter() - clock,
        )
        (logger.warning if report.errors else logger.info)(report.summary())
        return report

    async def _renew(self) -> None:
        """Extend the lease when half of it is gone, so a long pass keeps it."""
        now = self._now()
        half = timedelta(seconds=self._config.lease_seconds / 2)
        if self._lease_until is not None and now < self._lease_until - half:
            return
        if not await self._state.acquire(self._holder, now, self._config.lease_seconds):
            msg = "lease: taken over by another runner (this pass stopped)"
            raise _LeaseLost(msg)
        self._lease_until = now + timedelta(seconds=self._config.lease_seconds)

    async def _jobs(self, work: _Work, *, force: bool, dry_run: bool = False) -> None:
        memory = self._memory
        try:
            agents = await memory.agents()
        except Exception as exc:
            work.errors.append(f"agents: {exc}")
            agents = []
        work.agents = len(agents)
        interval = memory.config.options.consolidation_interval
        if self._hold_consolidation and not force and not dry_run:
            # A server's first pass: consolidation starts with the next one.
            self._hold_consolidation = False
            work.skipped.append(_HELD)
        else:
            await self._consolidate(work, agents, interval, force=force, dry_run=dry_run)
        if dry_run:
            work.skipped.append("dry run: sweeps, forgetting and the evolver not run")
            return
        await self._sweep(work, agents, force=force)
        await self._forget(work, agents, force=force)
        await self._evolve(work, force=force)

    async def _consolidate(
        self,
        work: _Work,
        agents: Iterable[str],
        interval: ConsolidationInterval,
        *,
        force: bool,
        dry_run: bool = False,
    ) -> None:
        last = await self._state.last_runs(JOB_CONSOLIDATE)
        strategy = self._config.consolidation_strategy
        for agent in agents:
            if not _interval_due(interval, last.get(agent), self._now(), force=force):
                continue
            await self._renew()
            try:
                result = await self._memory.consolidate(
                    agent_id=agent, strategy=strategy, dry_run=dry_run
                )
            except MemoryCapabilityError as exc:
                work.skipped.append(f"consolidation skipped ({exc})")
                return
            except Exception as exc:
                logger.warning("maintenance: consolidation of %s failed: %s", agent, exc)
                work.errors.append(f"consolidate {agent}: {exc}")
                continue
            if not dry_run:
                await self._state.record_run(JOB_CONSOLIDATE, agent, self._now())
            groups = tuple(
                MergeGroup(
                    category=g.category.value,
                    merged_ids=g.consolidated_ids,
                    into=g.created_ids[0] if len(g.created_ids) == 1 else None,
                )
                for g in result.groups
                if g.consolidated_ids
            )
            work.consolidated.append(
                ConsolidationRun(
                    agent_id=agent,
                    created=len(result.created_ids),
                    archived=len(result.removed_ids),
                    marked=len(result.marked_ids),
                    groups=groups,
                    too_young=result.too_young,
                    errors=result.errors,
                )
            )
            work.errors.extend(f"consolidate {agent}: {e}" for e in result.errors)

    async def _sweep(self, work: _Work, agents: Iterable[str], *, force: bool) -> None:
        last = await self._state.last_runs(JOB_SWEEP)
        interval = self._config.sweep_interval
        for agent in agents:
            if not _interval_due(interval, last.get(agent), self._now(), force=force):
                continue
            await self._renew()
            try:
                swept = await self._memory.sweep(agent_id=agent)
            except MemoryCapabilityError as exc:
                work.skipped.append(f"sweep skipped ({exc})")
                return
            except Exception as exc:
                logger.warning("maintenance: retention sweep of %s failed: %s", agent, exc)
                work.errors.append(f"sweep {agent}: {exc}")
                continue
            await self._state.record_run(JOB_SWEEP, agent, self._now())
            work.swept.append(
                SweepRun(agent_id=agent, expired=len(swept.expired), evicted=len(swept.evicted))
            )

    async def _forget(self, work: _Work, agents: Iterable[str], *, force: bool) -> None:
        """Optical forgetting (``forgetting.enabled``), per agent on the sweep interval."""
        if not self._memory.config.forgetting.enabled:
            return
        last = await self._state.last_runs(JOB_FORGET)
        for agent in agents:
            if not _interval_due(
                self._config.sweep_interval, last.get(agent), self._now(), force=force
            ):
                continue
            await self._renew()
            try:
                reports = await self._memory.forget(agent_id=agent)
            except Exception as exc:
                logger.warning("maintenance: forgetting of %s failed: %s", agent, exc)
                work.errors.append(f"forgetting {agent}: {exc}")
                continue
            await self._state.record_run(JOB_FORGET, agent, self._now())
            decayed = sum(len(r.archived) for r in reports)
            if decayed:
                work.skipped.append(f"forgetting {agent}: {decayed} decayed")

    async def _evolve(self, work: _Work, *, force: bool) -> None:
        if not self._memory.config.procedural.evolver.enabled:
            return
        last = await self._state.last_run(JOB_EVOLVE)
        if not _interval_due(self._config.evolver_interval, last, self._now(), force=force):
            return
        await self._renew()
        try:
            report = await self._memory.evolve()
        except Exception as exc:
            logger.warning("maintenance: skill evolver failed: %s", exc)
            work.errors.append(f"evolve: {exc}")
            return
        work.evolver = EvolverRun(
            emitted=len(report.emitted), trajectories=report.trajectories, error=report.error
        )
        if report.error:
            # The evolver reports its own failures; a failed cycle is retried next pass.
            work.errors.append(f"evolve: {report.error}")
            return
        await self._state.record_run(JOB_EVOLVE, "", self._now())

    async def run_forever(self, stop: asyncio.Event | None = None) -> None:
        """Run a pass every ``poll_seconds`` until ``stop`` is set (or the task is cancelled)."""
        done = stop if stop is not None else asyncio.Event()
        while not done.is_set():
            await self.run_pass()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), timeout=self._config.poll_seconds)

    async def close(self) -> None:
        """Close the state store if this scheduler opened it (the memory stays open)."""
        if self._owns_state:
            await self._state.close()


class _LeaseLost(Exception):
    """The lease went to another runner mid-pass (this one was too slow to renew it)."""


class _Work:
    """What a pass has done so far (turned into the report at the end)."""

    def __init__(self) -> None:
        self.agents = 0
        self.consolidated: list[ConsolidationRun] = []
        self.swept: list[SweepRun] = []
        self.evolver: EvolverRun | None = None
        self.skipped: list[str] = []
        self.errors: list[str] = []


def _tenant_store_url(config: MemvaultConfig, tenant: str) -> str:
    """The storage URL of a served tenant's side tables (as the service computes it)."""
    from memvault.api.auth import DEFAULT_TENANT
    from memvault.backends.factory import tenant_url
    from memvault.config import COMPOSITE_URL

    url = config.resolved_url()
    if url == COMPOSITE_URL:
        url = config.composite_default_url()
    return url if tenant == DEFAULT_TENANT else tenant_url(url, tenant)


class ServiceMaintenance:
    """Maintenance of every tenant a :class:`~memvault.service.MemoryService` serves.

    Each tenant's store has its own state table and lease. The default tenant is always
    maintained; other tenants once the server has opened them (a tenant nobody used since the
    server started is maintained by ``memvault maintain`` or after its first request).
    """

    def __init__(
        self,
        service: MemoryService,
        *,
        config: MaintenanceConfig | None = None,
        now: Callable[[], datetime] = utc_now,
        holder: str | None = None,
    ) -> None:
        self._service = service
        self._config = config if config is not None else service.config.maintenance
        self._now = now
        self._holder = holder or new_holder_id()
        self._schedulers: dict[str, MaintenanceScheduler] = {}
        self._serial = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._passes = 0

    @property
    def passes(self) -> int:
        """How many passes over the tenants have finished."""
        return self._passes

    def submit_pass(
        self, *, force: bool = False
    ) -> concurrent.futures.Future[list[MaintenanceReport]]:
        """Run a pass now on the loop :meth:`run_forever` runs on, from any other thread.

        For an operator hook or a test that must not wait ``poll_seconds``: the pass takes
        its turn after the one in progress, if any. Returns a future of its reports.

        Raises:
            RuntimeError: :meth:`run_forever` is not running.
        """
        loop = self._loop
        if loop is None or loop.is_closed():
            msg = "the maintenance loop is not running"
            raise RuntimeError(msg)
        return asyncio.run_coroutine_threadsafe(self.run_pass(force=force), loop)

    def _tenants(self) -> list[str]:
        from memvault.api.auth import DEFAULT_TENANT

        # The tenants the service has opened (it has no public listing of them).
        opened: dict[str, object] = getattr(self._service, "_memories", {})
        return [DEFAULT_TENANT, *sorted(t for t in opened if t != DEFAULT_TENANT)]

    async def run_pass(self, *, force: bool = False) -> list[MaintenanceReport]:
        """One pass over every tenant; never raises (cancellation aside).

        Passes run one at a time. A tenant's first pass runs no consolidation (see
        :class:`MaintenanceScheduler`'s ``first_pass_consolidates``) unless ``force``.
        """
        async with self._serial:
            try:
                return await self._pass_tenants(force=force)
            finally:
                self._passes += 1

    async def _pass_tenants(self, *, force: bool) -> list[MaintenanceReport]:
        reports = []
        for tenant in self._tenants():
            scheduler = self._schedulers.get(tenant)
            opened = getattr(self._service, "_memories", {}).get(tenant)
            if scheduler is not None and opened is not None and scheduler.memory is not opened:
                # The service closed the tenant (idle) and opened it again: a new scheduler.
                with contextlib.suppress(Exception):
                    await scheduler.state.close()
                del self._schedulers[tenant]
                scheduler = None
            if scheduler is None:
                try:
                    memory = await self._service.memory(tenant)
                    state = open_maintenance_state(
                        memory_store_url(memory) or _tenant_store_url(self._service.config, tenant)
                    )
                except Exception as exc:
                    logger.warning("maintenance: tenant %r cannot be opened: %s", tenant, exc)
                    continue
                scheduler = MaintenanceScheduler(
                    memory,
                    state,
                    config=self._config,
                    now=self._now,
                    holder=self._holder,
                    # A served tenant's first pass never consolidates (see the scheduler).
                    first_pass_consolidates=False,
                )
                self._schedulers[tenant] = scheduler
            reports.append(await scheduler.run_pass(force=force))
        return reports

    async def run_forever(self, stop: asyncio.Event | None = None) -> None:
        """A pass every ``poll_seconds`` until ``stop`` is set or the task is cancelled."""
        done = stop if stop is not None else asyncio.Event()
        self._loop = asyncio.get_running_loop()
        try:
            while not done.is_set():
                await self.run_pass()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), timeout=self._config.poll_seconds)
        finally:
            self._loop = None

    async def close(self) -> None:
        """Close the state stores (the service's memories stay open)."""
        for scheduler in self._schedulers.values():
            try:
                await scheduler.state.close()
            except Exception as exc:
                logger.warning("maintenance: closing %s failed: %s", scheduler.state.location, exc)
        self._schedulers.clear()

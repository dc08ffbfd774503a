"""Scheduled reports: APScheduler 3 with its jobs in gpubot's database, run by the leader only.

- Jobs live in a SQLAlchemy job store on the same database as incidents, so the schedule,
  and a retry that is pending, survive restarts.
- Every replica runs a scheduler, started paused; the one holding the Lease resumes it and
  the others stay paused (a shared job store must have one scheduler processing it).
- A run missed while the bot was down (the stored next run time is in the past) runs once on
  start: `coalesce=True` folds the missed runs into one and `misfire_grace_time=None` lets
  that one run however late it is.
- A report whose Prometheus is down is retried every `retry_every`, `retries` times at most,
  through a one-off job in the same store.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from gpubot.clock import SystemClock
from gpubot.config import IdleReportSettings
from gpubot.errors import ConfigError
from gpubot.ports import Clock, Leadership
from gpubot.reports.jobs import IdleReportJob

log = logging.getLogger(__name__)

IDLE_JOB = "idle-report"
IDLE_RETRY = "idle-report-retry"
JOB_TABLE = "gpubot_scheduled_jobs"
# pg_advisory_xact_lock key for creating JOB_TABLE (any constant that gpubot uses only here).
_JOB_TABLE_LOCK = int.from_bytes(
    hashlib.sha256(JOB_TABLE.encode()).digest()[:8], "big", signed=True
)

# Stored jobs name their function by import path and their arguments by value (pickled), so
# the function is module-level and looks up the live runner of this process by name.
_RUNNERS: dict[str, Callable[..., Awaitable[None]]] = {}


async def run_job(name: str, *args: Any) -> None:
    runner = _RUNNERS.get(name)
    if runner is None:
        log.warning("scheduled job %s has no runner in this process; skipped", name)
        return
    await runner(*args)


def _create_job_table(engine: Any, table: Any) -> None:
    """Create the job table, one replica at a time. APScheduler checks for the table, then
    creates it: two replicas starting together on a fresh PostgreSQL database both find it
    missing and the second dies on a unique violation. Under a transaction-scoped advisory
    lock the second waits for the first to commit and then finds the table."""
    from sqlalchemy import func, select

    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(select(func.pg_advisory_xact_lock(_JOB_TABLE_LOCK)))
        table.create(conn, checkfirst=True)


class ReportScheduler:
    """The `serve` companion that owns the APScheduler instance."""

    def __init__(
        self,
        settings: IdleReportSettings,
        *,
        job: IdleReportJob,
        engine: Callable[[], Any],  # makes a SQLAlchemy Engine on gpubot's database
        leadership: Leadership,
        check_every: float = 5.0,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self._trigger()  # a crontab whose values are out of range: one line, before serving
        self.job = job
        self.engine = engine
        self.leadership = leadership
        self.check_every = check_every
        self.scheduler: Any = None
        self._engine: Any = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        tz = ZoneInfo(self.settings.timezone)
        self._engine = self.engine()
        jobs = SQLAlchemyJobStore(engine=self._engine, tablename=JOB_TABLE)
        _create_job_table(self._engine, jobs.jobs_t)
        self.scheduler = AsyncIOScheduler(
            jobstores={"default": jobs},
            job_defaults={"coalesce": True, "misfire_grace_time": None, "max_instances": 1},
            timezone=tz,
        )
        _RUNNERS[IDLE_JOB] = self._run_idle
        self.scheduler.start(paused=True)
        self._ensure_jobs()
        self.sync_leadership()
        self._watch = asyncio.get_running_loop().create_task(self._watch_leadership())

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        _RUNNERS.pop(IDLE_JOB, None)

    def next_run(self) -> datetime | None:
        job = self.scheduler.get_job(IDLE_JOB) if self.scheduler is not None else None
        return job.next_run_time if job is not None else None

    def _trigger(self) -> Any:
        from apscheduler.triggers.cron import CronTrigger

        try:
            return CronTrigger.from_crontab(
                self.settings.cron, timezone=ZoneInfo(self.settings.timezone)
            )
        except ValueError as exc:
            raise ConfigError(
                f"reports.idle.cron: invalid crontab {self.settings.cron!r}: {exc}"
            ) from exc

    def _ensure_jobs(self) -> None:
        """Keep the stored job when its schedule is unchanged, so its past-due run time (the
        bot was down) fires once now; otherwise store the schedule from the config."""
        existing = self.scheduler.get_job(IDLE_JOB)
        if not self.settings.enabled:
            if existing is not None:
                existing.remove()
            return
        trigger = self._trigger()
        if existing is not None and repr(existing.trigger) == repr(trigger):
            return
        self.scheduler.add_job(
            run_job,
            trigger,
            args=[IDLE_JOB],
            id=IDLE_JOB,
            name="idle GPU report",
            replace_existing=True,
        )

    def sync_leadership(self) -> None:
        """Resume on the leader, pause elsewhere."""
        from apscheduler.schedulers.base import STATE_PAUSED, STATE_RUNNING

        leader = self.leadership.is_leader()
        if leader and self.scheduler.state == STATE_PAUSED:
            log.info("scheduler: leader, resuming scheduled jobs")
            self.scheduler.resume()
        elif not leader and self.scheduler.state == STATE_RUNNING:
            log.info("scheduler: not the leader, pausing scheduled jobs")
            self.scheduler.pause()

    async def _watch_leadership(self) -> None:
        while True:
            await self.clock.sleep(self.check_every)
            try:
                self.sync_leadership()
            except Exception:  # a loop's edge: keep watching
                log.exception("scheduler: leadership check failed")

    async def _run_idle(self, clusters: Sequence[str] | None = None, attempt: int = 0) -> None:
        if not self.leadership.is_leader():
            log.info("idle report: not the leader, skipped")
            return
        final = attempt >= self.settings.retries
        try:
            result = await self.job.run(clusters=clusters, attempt=attempt, final=final)
        except Exception:  # the job's edge: a report must never take the bot down
            log.exception("idle report failed")
            return
        if result.to_retry and not final:
            from apscheduler.triggers.date import DateTrigger

            # APScheduler's own time: it compares run dates with the wall clock.
            when = datetime.now(UTC) + self.settings.retry_every
            self.scheduler.add_job(
                run_job,
                DateTrigger(run_date=when),
                args=[IDLE_JOB, result.to_retry, attempt + 1],
                id=IDLE_RETRY,
                name="idle GPU report (retry)",
                replace_existing=True,
            )
            log.info("idle report: retry %d at %s for %s", attempt + 1, when, result.to_retry)

"""The report scheduler on a real APScheduler with its SQLAlchemy job store in SQLite, under
freezegun: cron from config, one run after downtime, leader-only runs, retries when
Prometheus is down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store.database import create_store_engine
from gpubot.clock import FakeClock, SystemClock
from gpubot.config import IdleReportSettings
from gpubot.domain.fleet.cluster import Sample
from gpubot.errors import MetricsUnavailableError
from gpubot.ports import ClusterPorts
from gpubot.reports.collect import IdleReporter
from gpubot.reports.jobs import IdleReportJob
from gpubot.reports.scheduler import IDLE_JOB, IDLE_RETRY, ReportScheduler

MONDAY_0800 = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)  # a Monday


class Metrics:
    """Answers the report's queries from the simulated cluster, or fails like a dead
    Prometheus while `down` is set; counts the queries."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self.sim = sim
        self.down = False
        self.queries = 0

    async def query(self, *, promql: str) -> list[Sample]:
        self.queries += 1
        if self.down:
            raise MetricsUnavailableError("Prometheus at http://127.0.0.1:1: connection refused")
        return await self.sim.metrics.query(promql=promql)


class Leader:
    def __init__(self, leading: bool = True) -> None:
        self.leading = leading

    def is_leader(self) -> bool:
        return self.leading


class Rig:
    def __init__(self, tmp_path: Path, **settings: Any) -> None:
        self.sim = SimulatedCluster.default(name="sim")
        self.metrics = Metrics(self.sim)
        self.notifier = RecordingNotifier()
        self.leader = Leader()
        self.settings = IdleReportSettings(**settings)
        self.db = f"sqlite:///{tmp_path / 'jobs.db'}"
        self.schedulers: list[ReportScheduler] = []
        self.clock = FakeClock(auto_advance=False)  # the leadership check's clock

    def make(self) -> ReportScheduler:
        ports = ClusterPorts(
            name="sim", kube=self.sim.kube, agent=self.sim.agent, metrics=self.metrics
        )
        reporter = IdleReporter(
            self.settings, clusters={"sim": ports}, audit=_NoAudit(), clock=SystemClock()
        )
        job = IdleReportJob(reporter, self.notifier, channel="#gpu-reports", chart=False)
        scheduler = ReportScheduler(
            self.settings,
            job=job,
            engine=lambda: create_store_engine(self.db),
            leadership=self.leader,
            clock=self.clock,
        )
        self.schedulers.append(scheduler)
        return scheduler

    def reports(self) -> list[str]:
        return [c.text for c in self.notifier.of("report")]


class _NoAudit:
    async def events(self, **filters: object) -> list[Any]:
        return []


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Callable[..., Rig]]:
    made: list[Rig] = []

    def factory(**settings: Any) -> Rig:
        made.append(Rig(tmp_path, **settings))
        return made[-1]

    yield factory
    for r in made:
        for s in r.schedulers:
            await s.stop()


async def until(predicate: Callable[[], bool], within: float = 60.0) -> None:
    """Wait for what APScheduler does on its own (real) loop time; a busy machine only
    makes it later."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not predicate():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.02)


def nothing_due(s: ReportScheduler) -> bool:
    """No job of the scheduler is due now: every next run time lies ahead of the (frozen)
    clock, so nothing more can run until the clock moves. This proves "nothing more runs"
    from the schedule itself, instead of waiting a while and seeing nothing."""
    now = datetime.now(UTC)
    return all(job.next_run_time > now for job in s.scheduler.get_jobs())


def paused(s: ReportScheduler) -> bool:
    from apscheduler.schedulers.base import STATE_PAUSED

    return bool(s.scheduler.state == STATE_PAUSED)


async def test_cron_from_config_in_its_time_zone(rig: Callable[..., Rig]) -> None:
    """Default weekdays 09:00: on Friday evening in Berlin the next run is Monday 09:00 Berlin."""
    r = rig(timezone="Europe/Berlin")
    with freeze_time(datetime(2026, 11, 27, 18, 0, tzinfo=UTC), real_asyncio=True):
        s = r.make()
        await s.start()
        when = s.next_run()
        assert when is not None
        assert when.isoformat() == "2026-11-30T09:00:00+01:00"
        assert nothing_due(s)
        await s.stop()
    assert r.reports() == []


async def test_missed_runs_while_down_run_once_on_start(rig: Callable[..., Rig]) -> None:
    """Scheduled Monday 09:00, the bot is down from Monday 08:00 to Wednesday 10:30 (three
    runs missed): on start the report is posted once, and the next run is Thursday 09:00."""
    r = rig()
    with freeze_time(MONDAY_0800, real_asyncio=True):
        first = r.make()
        await first.start()
        assert first.next_run() == datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
        await first.stop()
    with freeze_time(MONDAY_0800 + timedelta(days=2, hours=2, minutes=30), real_asyncio=True):
        second = r.make()
        await second.start()
        await until(lambda: len(r.reports()) == 1 and nothing_due(second))
        assert len(r.reports()) == 1
        assert r.reports()[0].startswith("Idle GPUs on sim: 8 allocated GPUs idle")
        assert second.next_run() == datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    assert r.metrics.queries == 3


async def test_only_the_leader_runs_scheduled_jobs(rig: Callable[..., Rig]) -> None:
    """A replica without the Lease keeps its scheduler paused: the due report waits until it
    leads, then runs once."""
    r = rig()
    with freeze_time(MONDAY_0800, real_asyncio=True):
        s = r.make()
        await s.start()
        await s.stop()
    r.leader.leading = False
    with freeze_time(MONDAY_0800 + timedelta(hours=2), real_asyncio=True):
        s = r.make()
        await s.start()
        assert paused(s)  # the due report cannot run while another replica leads
        assert not nothing_due(s)  # ... and it is due
        assert r.reports() == []
        r.leader.leading = True  # the Lease moved here
        await r.clock.until_sleeping(1)
        assert paused(s)  # leadership is read every check_every of the clock, not at once
        await r.clock.run_for(s.check_every)
        assert not paused(s)
        await until(lambda: len(r.reports()) == 1 and nothing_due(s))
        assert not paused(s)
        assert len(r.reports()) == 1


async def test_prometheus_down_says_so_retries_and_recovers(rig: Callable[..., Rig]) -> None:
    """Prometheus refuses: the channel hears "unavailable, retrying" once, a retry is stored
    in the job store (it survives a restart) 5 min later, and when Prometheus is back the
    retry posts the report. The bot keeps running."""
    r = rig(retries=3)
    r.metrics.down = True
    with freeze_time(MONDAY_0800 + timedelta(hours=1), real_asyncio=True):
        s = r.make()
        await s.start()
        s.scheduler.get_job(IDLE_JOB).modify(next_run_time=datetime.now(UTC))
        await until(lambda: len(r.reports()) == 1)
        assert "report unavailable" in r.reports()[0]
        assert "connection refused" in r.reports()[0]
        assert "Retrying every 5 min." in r.reports()[0]
        await until(lambda: s.scheduler.get_job(IDLE_RETRY) is not None)
        retry = s.scheduler.get_job(IDLE_RETRY)
        assert retry.args == (IDLE_JOB, ["sim"], 1)
        assert retry.next_run_time == datetime(2026, 11, 23, 9, 5, tzinfo=UTC)
        await s.stop()
    r.metrics.down = False
    with freeze_time(datetime(2026, 11, 23, 9, 6, tzinfo=UTC), real_asyncio=True):
        s = r.make()  # a restart: the retry comes back from the job store
        await s.start()
        await until(lambda: len(r.reports()) == 2)
        assert r.reports()[1].startswith("Idle GPUs on sim: 8 allocated GPUs idle")
        # one-off: gone after it ran
        await until(lambda: s.scheduler.get_job(IDLE_RETRY) is None)
        assert nothing_due(s)


async def test_retries_stop_after_the_configured_number(rig: Callable[..., Rig]) -> None:
    """Each failed retry stays quiet; the last one says it gave up, and no retry is left."""
    r = rig(retries=2)
    r.metrics.down = True
    s = r.make()
    with freeze_time(MONDAY_0800 + timedelta(minutes=30), real_asyncio=True):  # none due
        await s.start()
        for attempt in (0, 1, 2):
            await s._run_idle(None if attempt == 0 else ["sim"], attempt)
    texts = r.reports()
    assert len(texts) == 2
    assert "Retrying every 5 min." in texts[0]
    assert "Gave up until next time." in texts[1]
    assert s.scheduler.get_job(IDLE_RETRY).args == (IDLE_JOB, ["sim"], 2)  # from attempt 1
    assert r.metrics.queries == 9


async def test_config_changes_replace_the_stored_schedule(rig: Callable[..., Rig]) -> None:
    """A new cron in the config replaces the stored one; `enabled: false` removes the job."""
    r = rig()
    with freeze_time(MONDAY_0800, real_asyncio=True):
        s = r.make()
        await s.start()
        await s.stop()
        r.settings = IdleReportSettings(cron="30 7 * * *")
        s = r.make()
        await s.start()
        assert s.next_run() == datetime(2026, 11, 24, 7, 30, tzinfo=UTC)
        await s.stop()
        r.settings = IdleReportSettings(enabled=False)
        s = r.make()
        await s.start()
        assert s.next_run() is None


@pytest.mark.parametrize("cron", ["0 9 * *", "0 9 * * mon-fri; rm", "0 9 * * mon fri", "x" * 65])
def test_a_crontab_of_the_wrong_shape_is_refused_when_the_config_is_read(cron: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="invalid crontab"):
        IdleReportSettings(cron=cron)


@pytest.mark.parametrize("cron", ["61 9 * * *", "0 25 * * *", "0 9 * * someday"])
def test_a_crontab_value_out_of_range_is_one_config_error_when_the_scheduler_is_built(
    cron: str,
) -> None:
    """The config checks the shape only; the scheduler, which owns the cron library, names
    the value it cannot read, as a ConfigError (one line from `serve`), before anything runs."""
    from gpubot.errors import ConfigError

    with pytest.raises(ConfigError, match=r"reports\.idle\.cron: invalid crontab"):
        ReportScheduler(
            IdleReportSettings(cron=cron),
            job=None,  # type: ignore[arg-type]  # never reached: the crontab is read first
            engine=lambda: None,
            leadership=None,  # type: ignore[arg-type]
        )

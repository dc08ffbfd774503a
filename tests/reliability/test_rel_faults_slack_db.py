"""Slack and the database failing: Slack's 429 and 5xx, PostgreSQL connections cut mid-run and
during intake, a database outage longer than the store's own retries. Nothing is lost or
doubled, the process keeps answering, and the runs finish."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_engine import make_bot
from reliability_fuzz import error_log
from reliability_procs import PgSchema
from slack_harness import CHANNEL, FIXTURES, SlackHarness, slack_harness
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from waiting import eventually

from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import open_store
from gpubot.engine.clock import SystemClock
from gpubot.web.app import create_app

NODE = "gpu-node-07"


async def test_slack_429_and_500_are_waited_out_and_nothing_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack answers the first posts with 500 and then 429 (Retry-After), and an edit with
    503: the outbox backs off and retries each call; the incident still gets exactly one
    root, its whole thread in order, and the buttons work."""
    async with slack_harness(tmp_path, monkeypatch) as h:
        h.standin.fail("chat.postMessage", status=500, retry_after=None, times=2)
        h.standin.fail("chat.postMessage", status=429, retry_after=0.05, times=2)
        h.standin.fail("chat.update", status=503, retry_after=None, times=1)
        with error_log() as errors:
            inject_xid(h.sim, node=NODE, gpu=3)
            body = (FIXTURES / "xid79_firing.json").read_bytes()
            reply = await h.client.post(
                "/alertmanager", content=body, headers={"content-type": "application/json"}
            )
            assert reply.status_code == 200
            await _settled(h)
            statuses = [c.status for c in h.standin.of("chat.postMessage", ok_only=False)]
            assert statuses[:4] == [500, 500, 429, 429]
            stats = h.slack.notifier.outbox.stats
            assert stats.server_errors >= 3
            assert stats.rate_limited == 2
            [root] = h.standin.roots(CHANNEL)
            thread = "\n".join(h.standin.text_of(m) for m in h.standin.thread(root.ts))
            for part in ("Plan: xid79", "cordon", "taint", "Approval needed"):
                assert part in thread
            [approval_id] = h.approval_ids()
            assert (await h.click(approval_id, user="U1")).status_code == 200
            await _settled(h)
            [run] = await h.app.store.list_runs()
            drain = {s.step_id: s for s in await h.app.store.steps(run.id)}["drain"]
            assert drain.status.value == "succeeded"
            assert errors.take() == []


async def _settled(h: SlackHarness) -> None:
    for _ in range(5):
        await asyncio.sleep(0.05)
        await h.settle()


SLOW_QUARANTINE = """
name: slow-quarantine
description: Cordon, wait a moment, taint.
triggers: [{alertname: GPUXidError}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - {id: pause, action: wait, args: {duration: 1s}, approval: auto}
  - {id: taint, action: node.taint, approval: auto,
     args: {node: "{{ params.node }}", key: gpubot.io/xid, value: "79"}}
"""


async def test_postgres_connections_cut_mid_run_the_run_finishes(pg: PgSchema) -> None:
    """Every PostgreSQL connection gpubot holds is terminated (as a database restart or a
    failover does) while a run is in its wait step: the store reconnects, the run finishes,
    the audit chain verifies, and nothing is logged as an error."""
    sim = SimulatedCluster.default()
    store = open_store(pg.url)
    bot = make_bot(
        store=store,
        kube=sim.kube,
        agent=sim.agent,
        metrics=sim.metrics,
        runbook=SLOW_QUARANTINE,
        clock=SystemClock(),
    )
    with error_log() as errors:
        await bot.alert()
        [run] = await store.list_runs()

        async def pausing() -> bool:
            steps = {s.step_id: s.status.value for s in await store.steps(run.id)}
            return steps["pause"] == "running"

        await eventually(pausing, "the pause step to run")
        assert await asyncio.to_thread(pg.terminate_gpubot) >= 1
        run = await bot.only_run()
        assert run.status.value == "succeeded", run.note
        assert await store.verify() == []
        assert errors.take() == []
    assert (await sim.kube.get_node(node=NODE)).unschedulable
    await store.close()


NOTE = """
name: note
description: Write the alert into the thread.
triggers: [{alertname: GPUXidError}]
params: {node: {type: node, default: "{{ alert.labels.Hostname }}"}}
steps:
  - {id: tell, action: notify, approval: auto, args: {message: "XID on {{ params.node }}"}}
"""


async def test_postgres_connections_cut_during_intake_nothing_lost(pg: PgSchema) -> None:
    """PostgreSQL connections are cut again and again while 40 webhook bodies arrive at once:
    each is stored (200) or refused with 503 so that Alertmanager sends it again, never a
    500; sent again, every alert is stored exactly once, the process keeps answering, and
    the periodic tick starts and finishes whatever a cut interrupted, runs included."""
    sim = SimulatedCluster.default()
    store = open_store(pg.url)
    bot = make_bot(
        store=store,
        kube=sim.kube,
        agent=sim.agent,
        metrics=sim.metrics,
        runbook=NOTE,
        clock=SystemClock(),
    )
    web = create_app(bot.service)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://gpubot")
    bodies = [_xid_body(n) for n in range(1, 41)]
    stop = threading.Event()
    cut: list[int] = []

    def cutter() -> None:
        while not stop.wait(0.03):
            cut.append(pg.terminate_gpubot())

    cutting = threading.Thread(target=cutter, daemon=True)
    try:
        cutting.start()
        answers = await asyncio.gather(*(_post(client, b) for b in bodies))
        stop.set()
        cutting.join(timeout=5)
        codes = [a.status_code for a in answers]
        assert set(codes) <= {200, 503}, codes
        assert sum(cut) > 0  # connections really were cut while the bodies came in
        # Alertmanager sends again what was not acknowledged (and, here, what was: a retry
        # after a lost 2xx must not double anything).
        again = await asyncio.gather(*(_post(client, b) for b in bodies))
        assert {a.status_code for a in again} == {200}
        for _ in range(3):  # serve's ticker: advance what a cut connection interrupted
            await bot.service.background.tick()
            await bot.service.wait_idle()
        assert (await client.get("/healthz")).status_code == 200
        incidents = await store.list_incidents(limit=100)
        assert len(incidents) == 40
        for incident in incidents:
            assert len(await store.alerts_for(incident.id)) == 1
        runs = await store.list_runs()
        assert len(runs) == 40
        assert {r.status.value for r in runs} == {"succeeded"}
        assert await store.verify() == []
    finally:
        stop.set()
        await client.aclose()
        await bot.service.wait_idle()
        await store.close()


def _xid_body(n: int) -> bytes:
    text = (FIXTURES / "xid79_firing.json").read_text()
    return (
        text.replace("gpu-node-07", f"gpu-node-{n:02d}")
        .replace("7c0a5e21f4b3d9a1", f"{n:016x}")
        .encode()
    )


async def _post(client: httpx.AsyncClient, body: bytes) -> httpx.Response:
    return await client.post(
        "/alertmanager", content=body, headers={"content-type": "application/json"}
    )


class OutageStore:
    """The real store, but the database is away for the next `calls` run creations (longer
    than the store's own reconnect retries)."""

    def __init__(self, inner: Any, calls: int) -> None:
        self._inner = inner
        self.calls = calls

    def _away(self) -> None:
        if self.calls > 0:
            self.calls -= 1
            raise OperationalError("INSERT INTO runs", {}, ConnectionError("database is away"))

    async def create_run(self, *args: Any, **kw: Any) -> Any:
        self._away()
        return await self._inner.create_run(*args, **kw)

    async def create_run_read(self, *args: Any, **kw: Any) -> Any:
        self._away()
        return await self._inner.create_run_read(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_follow_up_lost_to_a_database_outage_is_picked_up_by_the_tick(
    tmp_path: Path,
) -> None:
    """The alert is stored (Alertmanager has its 2xx) but the database goes away before the
    incident's run is created: the next periodic tick starts the run, once, and it finishes;
    no restart needed."""
    sim = SimulatedCluster.default()
    inner = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store = OutageStore(inner, calls=1)
    bot = make_bot(
        store=store, kube=sim.kube, agent=sim.agent, metrics=sim.metrics, runbook=SLOW_QUARANTINE
    )
    with pytest.raises(OperationalError):
        await bot.alert()
    [incident] = await inner.list_incidents()
    assert await inner.list_runs() == []
    await bot.service.background.tick()
    await bot.service.background.tick()  # a second tick finds the run and starts nothing more
    run = await bot.only_run()
    assert run.status.value == "succeeded", run.note
    assert run.incident_id == incident.id
    assert (await sim.kube.get_node(node=NODE)).unschedulable
    assert "not started" not in bot.thread()
    await inner.close()


async def test_store_redoes_a_transaction_whose_connection_is_cut(pg: PgSchema) -> None:
    """A PostgreSQL connection dies in the middle of a transaction (the server restarted, or
    failed over): the store redoes the whole transaction on a new connection, and the
    caller sees only the result."""
    store = open_store(pg.url)
    attempts: list[int] = []

    def slow_then_quick(conn: Any) -> int:
        attempts.append(1)
        conn.execute(text("SELECT pg_sleep(1)" if len(attempts) == 1 else "SELECT 1"))
        return len(attempts)

    cut = threading.Timer(0.3, pg.terminate_gpubot)
    cut.start()
    try:
        # The store's one-transaction-per-call seam, with a transaction slow enough to cut.
        assert await store._run(slow_then_quick, write=False) == 2
    finally:
        cut.cancel()
        await store.close()

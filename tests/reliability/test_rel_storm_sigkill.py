"""A real Alertmanager delivers an alert storm to a real `gpubot serve`, which is SIGKILLed
in the middle of it and restarted on the same port: nothing is lost, nothing is doubled."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_procs import (
    PG_URL,
    PgSchema,
    Procs,
    free_port,
    serve,
    start_alertmanager,
    tool,
    wait_until,
    write_config,
)
from sqlalchemy import Engine, create_engine, text

from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.runbooks.runs import Run

# 200 alerts: one incident per node, and each other GPU's fault of a node a follow-up
# incident of its own once the node's run has ended (200 incidents, 200 runs in the end).
NODES, GPUS = 50, 4


def storm(gpus: range, started: datetime) -> list[dict[str, Any]]:
    """XID 13 alerts (NVIDIA: restart the application) on every node, for these GPUs."""
    return [
        {
            "labels": {
                "alertname": "GPUXidError",
                "cluster": "sim",
                "Hostname": f"storm-node-{n:02d}",
                "gpu": str(g),
                "xid": "13",
                "severity": "critical",
                "namespace": "train",
                "pod": f"job-{n:02d}-{g}",
            },
            "annotations": {"summary": f"XID 13 on storm-node-{n:02d} GPU {g}"},
            "startsAt": started.isoformat(),
            "generatorURL": "http://prometheus/graph",
        }
        for n in range(1, NODES + 1)
        for g in gpus
    ]


def push(am: str, alerts: list[dict[str, Any]]) -> None:
    reply = httpx.post(f"{am}/api/v2/alerts", json=alerts, timeout=10)
    assert reply.status_code == 200, reply.text


def db(store: SqlStore) -> tuple[list[Any], list[Run]]:
    """All stored alerts (with their incident) and all runs, read through the store."""

    async def read() -> tuple[list[Any], list[Run]]:
        incidents = await store.list_incidents(limit=1000)
        alerts = [a for i in incidents for a in await store.alerts_for(i.id)]
        return alerts, await store.list_runs()

    return asyncio.run(read())


@dataclass
class Database:
    url: str  # gpubot's store.url
    open: Callable[[], SqlStore]  # the same database, for the assertions
    raw: Engine  # cheap polling while gpubot works

    def count(self, sql: str) -> int:
        with self.raw.connect() as conn:
            return int(conn.execute(text(sql)).scalar_one())


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'gpubot.db'}"
        found = Database(url, lambda: open_store(url), create_engine(url))
    else:
        schema: PgSchema = request.getfixturevalue("pg")
        raw = create_engine(PG_URL, connect_args={"options": f"-csearch_path={schema.schema}"})
        found = Database(schema.url, schema.open, raw)
    yield found
    found.raw.dispose()


def test_sigkill_mid_storm_loses_nothing_and_doubles_nothing(
    tmp_path: Path, procs: Procs, database: Database
) -> None:
    """200 alerts over 50 nodes: gpubot dies (SIGKILL) once the first are stored, half the
    storm arrives while it is down, and it restarts on the same port. Alertmanager's retries
    deliver the rest: every alert Alertmanager holds is stored exactly once (fingerprint +
    startsAt), one incident per node plus one follow-up per other GPU fault, one run per
    incident and every run finished, and the audit chain verifies."""
    tool("prometheus-alertmanager")  # before anything starts: skip, or fail in CI, at once
    port = free_port()
    config = write_config(
        tmp_path / "gpubot.yaml",
        store={"url": database.url},
        clusters=[
            {"name": "sim", "backend": "simulated", "state_file": str(tmp_path / "sim.json")}
        ],
    )
    first = serve(procs, config, port=port, name="gpubot-1")
    store = database.open()
    try:
        am = start_alertmanager(procs, tmp_path, webhook=f"http://127.0.0.1:{port}/alertmanager")
        started = datetime.now(UTC).replace(microsecond=0)
        push(am, storm(range(0, 2), started))

        # Kill as soon as the first alerts are durable: the rest are in flight or queued.
        stored = "SELECT count(*) FROM alerts"
        wait_until(lambda: database.count(stored) > 0, "the first stored alerts")
        procs.kill(first)
        stored_at_kill = database.count(stored)
        assert 0 < stored_at_kill < NODES * GPUS

        push(am, storm(range(2, GPUS), started))  # the second half finds gpubot down
        serve(procs, config, port=port, name="gpubot-2")

        def settled() -> bool:
            unfinished = "SELECT count(*) FROM runs WHERE status NOT IN ('succeeded', 'failed')"
            return (
                database.count(stored) == NODES * GPUS
                and database.count("SELECT count(*) FROM runs") == NODES * GPUS
                and database.count(unfinished) == 0
            )

        wait_until(settled, "all 200 alerts stored and every run finished", limit=90)

        held = httpx.get(f"{am}/api/v2/alerts", timeout=10).json()
        assert len(held) == NODES * GPUS
        alerts, runs = db(store)
        pushed = Counter((a["fingerprint"], _instant(a["startsAt"])) for a in held)
        kept = Counter((a.fingerprint, a.starts_at) for a in alerts)
        assert kept == pushed  # every alert exactly once: none lost, none twice
        assert max(kept.values()) == 1

        incidents = asyncio.run(store.list_incidents(limit=1000))
        assert len(incidents) == NODES * GPUS
        assert Counter(i.key for i in incidents).most_common(1)[0][1] == 1
        nodes = Counter(i.node for i in incidents)
        assert nodes == {f"storm-node-{n:02d}": GPUS for n in range(1, NODES + 1)}
        assert (
            sum("#" not in i.key for i in incidents) == NODES
        )  # one per node, the rest follow-ups
        for incident in incidents:
            assert len(asyncio.run(store.alerts_for(incident.id))) == 1  # each GPU's fault

        assert sorted(r.incident_id or "" for r in runs) == sorted(i.id for i in incidents)
        assert {r.runbook for r in runs} == {"xid-route"}
        assert {r.status.value for r in runs} == {"succeeded"}

        events = asyncio.run(store.events())
        opened = Counter(e.incident_id for e in events if e.kind == "incident.opened")
        assert set(opened) <= {i.id for i in incidents}
        assert max(opened.values()) == 1
        created = Counter(e.run_id for e in events if e.kind == "run.created")
        assert max(created.values()) == 1
        assert asyncio.run(store.verify()) == []
    finally:
        asyncio.run(store.close())


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))

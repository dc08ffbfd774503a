"""Replicas that start together on a fresh PostgreSQL database each start their report
scheduler, whose job table none of them has created yet: every one of them starts."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, inspect, text

from gpubot.backends.store.database import create_store_engine
from gpubot.config import IdleReportSettings
from gpubot.reports.scheduler import JOB_TABLE, ReportScheduler

pytestmark = pytest.mark.postgres
REPLICAS = 6


class Follower:
    def is_leader(self) -> bool:
        return False


@pytest.fixture
def schema_url(postgres_url: str) -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    yield f"{postgres_url}?options={quote(f'-csearch_path={schema}')}"
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    admin.dispose()


def test_replicas_starting_together_all_start_their_scheduler(schema_url: str) -> None:
    together = threading.Barrier(REPLICAS)
    failed: list[BaseException] = []

    async def replica() -> None:
        scheduler = ReportScheduler(
            IdleReportSettings(),
            job=cast(Any, None),  # never runs: no replica here leads
            engine=lambda: create_store_engine(schema_url),
            leadership=Follower(),
        )
        together.wait()
        try:
            await scheduler.start()
        finally:
            await scheduler.stop()

    def run() -> None:
        try:
            asyncio.run(replica())
        except BaseException as exc:  # collected for the assertion below
            failed.append(exc)

    threads = [threading.Thread(target=run) for _ in range(REPLICAS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert failed == []
    engine = create_store_engine(schema_url)
    try:
        assert inspect(engine).has_table(JOB_TABLE)
    finally:
        engine.dispose()

"""Fixtures for the store tests: the same tests against a SQLite file and real PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from gpubot.backends.store import SqlStore, open_store

PG_URL = os.environ.get("GPUBOT_TEST_PG_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """PG_URL if the server answers; skips (fails in CI) when it does not."""
    engine = create_engine(PG_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(text("select 1"))
    except OperationalError as exc:
        reason = f"PostgreSQL is not reachable at {PG_URL}: {exc.orig}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    finally:
        engine.dispose()
    return PG_URL


@dataclass
class Database:
    """One empty database (a SQLite file, or a fresh PostgreSQL schema) for one test."""

    url: str
    schema: str | None = None
    opened: list[SqlStore] = field(default_factory=list)
    _raw: Engine | None = None

    def open(self, *, audit_key: bytes | None = None) -> SqlStore:
        """Another store on the same database: a second replica, or a restart."""
        store = open_store(self.url, audit_key=audit_key, schema=self.schema)
        self.opened.append(store)
        return store

    def execute(self, sql: str, **params: Any) -> int:
        """Raw SQL behind the store's back (tampering, counting); returns the rowcount."""
        with self.raw.begin() as conn:
            return conn.execute(text(sql), params).rowcount

    def scalar(self, sql: str, **params: Any) -> Any:
        with self.raw.begin() as conn:
            return conn.execute(text(sql), params).scalar()

    @property
    def raw(self) -> Engine:
        if self._raw is None:
            args = {"options": f"-csearch_path={self.schema}"} if self.schema else {}
            self._raw = create_engine(self.url, connect_args=args)
        return self._raw


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        db = Database(url=f"sqlite:///{tmp_path / 'gpubot.db'}")
    else:
        url = request.getfixturevalue("postgres_url")
        db = Database(url=url, schema=f"t_{uuid.uuid4().hex[:12]}")
    yield db
    for store in db.opened:
        store.dispose()
    if db._raw is not None:
        db._raw.dispose()
    if db.schema is not None:
        cleanup = create_engine(db.url)
        with cleanup.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{db.schema}" CASCADE'))
        cleanup.dispose()


@pytest.fixture
async def store(database: Database) -> AsyncIterator[SqlStore]:
    store = database.open()
    yield store
    await store.close()


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; those still running at its end get SIGKILL, by their PID."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:  # only the processes this test started, by their PID
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()

"""Prepared statements answer what Connection.execute answers, on SQLite and PostgreSQL.

They bypass SQLAlchemy's execution: these tests prove the values that come back (UTC
datetimes, JSON, booleans, NULLs), the values that go in (read back through SQLAlchemy), the
driver's errors mapped to SQLAlchemy's (the store's retries key on IntegrityError and on an
invalidated connection), and the statements they refuse.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from gpubot.backends.store.database import create_store_engine
from gpubot.backends.store.prepared import Prepared, compile_all, send
from gpubot.backends.store.tables import metadata, runs

if TYPE_CHECKING:
    from tests.integration.conftest import Database

T0 = datetime(2026, 12, 2, 7, 0, tzinfo=UTC)


def values(run_id: str, **over: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": run_id,
        "runbook": "xid79",
        "incident_id": None,
        "cluster": "sim",
        "target": "gpu-node-7",
        "requested_by": "alertmanager",
        "status": "running",
        "dry_run": False,
        "context": {"node": "gpu-node-7", "gpus": [0, 1], "labels": {"a": "<b>&"}},
        # Not UTC on purpose: it must read back as the same instant in UTC.
        "created_at": T0.astimezone(timezone(timedelta(hours=2))),
        "updated_at": T0,
        "note": "",
    }
    return {**row, **over}


INSERT = Prepared(insert(runs))
GET = Prepared(select(runs).where(runs.c.id == bindparam("run_id")))
BY_TARGET = Prepared(
    select(runs.c.id, runs.c.dry_run, runs.c.created_at)
    .where(runs.c.target == bindparam("target"), runs.c.status == "running")
    .order_by(runs.c.id)
)
SET_NOTE = Prepared(
    update(runs).where(runs.c.id == bindparam("run_id")).values(note=bindparam("n"))
)


@pytest.fixture
def engine(database: Database):  # type: ignore[no-untyped-def]
    if database.schema is not None:
        database.execute(f'CREATE SCHEMA "{database.schema}"')
    engine = create_store_engine(database.url, schema=database.schema, begin_event=False)
    with engine.begin() as conn:
        metadata.create_all(conn)
    yield engine
    engine.dispose()


def test_rows_read_back_as_sqlalchemy_reads_them(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        INSERT.run(conn, values("run-1"))
        INSERT.run(conn, values("run-2", dry_run=True, note="two", target="other"))
        INSERT.run(conn, values("run-3", status="succeeded"))
    with engine.connect() as conn:
        expected = conn.execute(select(runs).where(runs.c.id == "run-1")).mappings().one()
        got = GET.first(conn, {"run_id": "run-1"})
        assert got == dict(expected)
        assert got is not None
        assert got["created_at"] == T0
        assert got["created_at"].tzinfo is not None
        assert got["dry_run"] is False
        assert got["incident_id"] is None
        assert got["context"] == {"node": "gpu-node-7", "gpus": [0, 1], "labels": {"a": "<b>&"}}
        # A literal bound in the statement itself ("running") goes with the caller's values.
        assert BY_TARGET.rows(conn, {"target": "gpu-node-7"}) == [
            {"id": "run-1", "dry_run": False, "created_at": T0}
        ]
        assert GET.first(conn, {"run_id": "missing"}) is None
        assert GET.rows(conn, {"run_id": "missing"}) == []
        assert Prepared(select(runs.c.note).where(runs.c.id == "run-2")).scalar(conn) == "two"


def test_writes_count_their_rows_and_stay_in_the_callers_transaction(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        INSERT.run(conn, values("run-1"))
    with engine.connect() as conn:
        transaction = conn.begin()
        if conn.dialect.name == "sqlite":
            send(conn, "BEGIN IMMEDIATE")  # the driver is in autocommit: the store begins
        assert SET_NOTE.run(conn, {"run_id": "run-1", "n": "changed"}) == 1
        assert GET.first(conn, {"run_id": "run-1"})["note"] == "changed"  # type: ignore[index]
        transaction.rollback()
    with engine.connect() as conn:
        assert conn.execute(select(runs.c.note)).scalar() == ""
        assert SET_NOTE.run(conn, {"run_id": "nothing", "n": "x"}) == 0


def test_a_duplicate_key_is_sqlalchemys_integrity_error(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        INSERT.run(conn, values("run-1"))
    with pytest.raises(IntegrityError) as raised, engine.begin() as conn:
        INSERT.run(conn, values("run-1"))
    assert raised.value.connection_invalidated is False
    assert "INSERT INTO runs" in str(raised.value.statement)


@pytest.mark.parametrize("database", ["postgres"], indirect=True)  # a server to lose
def test_a_lost_connection_is_invalidated(database: Database, engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        database.execute("SELECT pg_terminate_backend(:pid)", pid=pid)
        with pytest.raises(DBAPIError) as raised:
            GET.first(conn, {"run_id": "run-1"})
        assert raised.value.connection_invalidated is True
        assert conn.invalidated
    # The pool hands out a working connection next.
    with engine.connect() as conn:
        assert GET.rows(conn, {"run_id": "run-1"}) == []


def test_send_runs_a_bare_statement_and_maps_its_errors(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        send(conn, "SELECT 1")
        with pytest.raises(DBAPIError):
            send(conn, "SELEKT nothing")


def test_statements_that_expand_their_parameters_are_refused(engine) -> None:  # type: ignore[no-untyped-def]
    expanding = Prepared(select(runs).where(runs.c.id.in_(["a", "b"])))
    with engine.connect() as conn, pytest.raises(ValueError, match="cannot expand"):
        expanding.rows(conn)


def test_run_many_writes_every_row(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.begin() as conn:
        INSERT.run_many(conn, [values(f"run-{n}", note=str(n)) for n in range(3)])
        INSERT.run_many(conn, [])  # nothing to write: no statement
    with engine.connect() as conn:
        notes = conn.execute(select(runs.c.id, runs.c.note).order_by(runs.c.id)).all()
    assert [tuple(row) for row in notes] == [("run-0", "0"), ("run-1", "1"), ("run-2", "2")]
    with pytest.raises(IntegrityError), engine.begin() as conn:
        INSERT.run_many(conn, [values("run-3"), values("run-0")])


def test_compile_all_leaves_nothing_to_compile_at_first_use(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import gpubot.backends.store.prepared as prepared

    made = Prepared(select(runs.c.id).where(runs.c.target == bindparam("target")))
    assert compile_all(engine.dialect) >= 1

    def refuse(*_args: object) -> None:
        raise AssertionError("compiled at first use")

    monkeypatch.setattr(prepared, "_compile", refuse)
    with engine.connect() as conn:
        assert made.rows(conn, {"target": "gpu-node-7"}) == []
        assert GET.rows(conn, {"run_id": "run-1"}) == []

"""The runs table's reads on an alert's path go by index, however many runs are kept, on
SQLite and on PostgreSQL; a database made by a release without those indexes gets them at
the next start.

Before each run an alert starts, the engine reads this runbook's runs on this node (the
attempt cap's window, and those still active); the leader reads runs by status on its
rounds. Runs are kept for the record, so a read that walks the whole table costs more with
every incident the install has ever had.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import inspect, text

from gpubot.backends.store.runs import _runs_where
from gpubot.domain.runbooks.runs import RunStatus

if TYPE_CHECKING:
    from tests.integration.conftest import Database

NEW = ("ix_runs_target", "ix_runs_status")
T0 = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
# The shapes an alert's dedupe reads and the leader's status reads take.
# Each: (statuses, filters, the index it is searched by).
SHAPES = {
    "this runbook on this node since the window's start": (
        None,
        ("runbook", "since", "target"),
        "target",
    ),
    "this runbook on this node, still active": (4, ("runbook", "target"), "target"),
    "every run in a status": (1, (), "status"),
}
PARAMS = {
    "runbook": "xid79",
    "target": "gpu-node-7",
    "since": T0,
    **{f"status_{i}": s.value for i, s in enumerate(RunStatus)},
}


def _indexes(db: Database) -> set[str]:
    return {i["name"] for i in inspect(db.raw).get_indexes("runs", schema=db.schema) if i["name"]}


def _plan(db: Database, sql: str) -> str:
    """The database's plan for `sql`, one string; PostgreSQL is told not to scan a table
    sequentially where any index could serve (a small test table would be scanned anyway)."""
    with db.raw.begin() as conn:
        if db.raw.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            rows = conn.execute(text(f"EXPLAIN {sql}"), PARAMS).all()
            return "\n".join(str(r[0]) for r in rows)
        rows = conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"), PARAMS).all()
        return "\n".join(str(r[-1]) for r in rows)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_alert_path_reads_of_runs_go_by_index(database: Database, shape: str) -> None:
    database.open()
    statuses, filters, index = SHAPES[shape]
    sql = str(_runs_where(statuses, filters)._statement)
    plan = _plan(database, sql)
    # Searched by the node and runbook (or the status) through the index made for that
    # read, not the whole table or the whole of an index walked in created_at order.
    if database.raw.dialect.name == "postgresql":
        assert "Seq Scan on runs" not in plan, plan
        assert f"ix_runs_{index}" in plan, plan
    else:
        assert "SCAN runs" not in plan, plan
        assert f"SEARCH runs USING INDEX ix_runs_{index} (" in plan, plan


def test_a_database_without_the_indexes_gets_them_at_the_next_start(database: Database) -> None:
    database.open()
    assert set(NEW) <= _indexes(database)
    for name in NEW:  # as a release before them left the database
        qualified = f'"{database.schema}".{name}' if database.schema else name
        database.execute(f"DROP INDEX {qualified}")
    assert not set(NEW) & _indexes(database)
    database.open()  # a restart on the new release
    assert set(NEW) <= _indexes(database)
    database.open()  # and another: nothing to add, nothing fails
    assert set(NEW) <= _indexes(database)

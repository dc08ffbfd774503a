"""Runbook runs and step states in SQL; one run per incident and runbook."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, false, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from gpubot.backends.store.database import SqlDatabase, json_roundtrip
from gpubot.backends.store.prepared import Prepared, Record
from gpubot.backends.store.tables import runs as runs_table
from gpubot.backends.store.tables import steps as steps_table
from gpubot.domain.instants import as_utc
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, StepStatus
from gpubot.errors import NotFoundError


class SqlRuns(SqlDatabase):
    """RunStore: what a restarted replica needs to carry a run on."""

    async def create_run(self, run: Run, steps: Sequence[StepState]) -> tuple[Run, bool]:
        states = list(steps)
        return await self._run(lambda conn: create_run_rows(conn, run, states), write=True)

    async def get_run(self, run_id: str) -> Run:
        return await self._run(lambda conn: _get_run(conn, run_id), write=False)

    async def list_runs(
        self,
        *,
        statuses: Sequence[RunStatus] | None = None,
        incident_id: str | None = None,
        runbook: str | None = None,
        target: str | None = None,
        since: datetime | None = None,
    ) -> list[Run]:
        given = {"incident_id": incident_id, "runbook": runbook, "target": target, "since": since}
        params = {name: value for name, value in given.items() if value is not None}
        wanted = [status.value for status in statuses] if statuses is not None else None
        params.update(_statuses(wanted))
        query = _runs_where(
            None if wanted is None else len(wanted), tuple(sorted(params.keys() & given.keys()))
        )
        return await self._run(
            lambda conn: [_run(row) for row in query.rows(conn, params)], write=False
        )

    async def runs_on_target(
        self, *, runbook: str, target: str, since: datetime, active: Sequence[RunStatus]
    ) -> tuple[list[Run], list[Run]]:
        """The runs of `runbook` on `target` created since `since`, and those of any age in
        an `active` status: two reads in one transaction (one snapshot)."""
        wanted = [status.value for status in active]
        either = _recent_or_active(len(wanted))
        params = {"runbook": runbook, "target": target, "since": since, **_statuses(wanted)}

        def read(conn: Connection) -> tuple[list[Run], list[Run]]:
            found = [_run(row) for row in either.rows(conn, params)]
            return (
                [run for run in found if as_utc(run.created_at) >= as_utc(since)],
                [run for run in found if run.status in active],
            )

        return await self._run(read, write=False)

    async def update_run(self, run_id: str, *, status: RunStatus, note: str, now: datetime) -> Run:
        return await self._run(
            lambda conn: update_run_row(conn, run_id, status=status, note=note, now=now),
            write=True,
        )

    async def steps(self, run_id: str) -> list[StepState]:
        return await self._run(
            lambda conn: [_step(row) for row in _STEPS.rows(conn, {"run_id": run_id})],
            write=False,
        )

    async def run_with_steps(self, run_id: str) -> tuple[Run, list[StepState]]:
        return await self._run(
            lambda conn: read_run_with_steps(conn, run_id), write=False, snapshot=True
        )

    async def save_step(self, state: StepState) -> None:
        await self._run(lambda conn: self._upsert_step(conn, state), write=True)

    def _upsert_step(self, conn: Connection, state: StepState) -> None:
        upsert = _UPSERT_STEP["postgresql" if self._postgres else "sqlite"]
        upsert.run(conn, _step_values(state))


_STEP_KEY = ("run_id", "step_id")


def _upsert_step(dialect: Any) -> Any:
    # Both dialects speak INSERT ... ON CONFLICT, which makes the upsert one statement.
    upsert = dialect.insert(steps_table)
    return upsert.on_conflict_do_update(
        index_elements=[steps_table.c.run_id, steps_table.c.step_id],
        set_={c.name: upsert.excluded[c.name] for c in steps_table.c if c.name not in _STEP_KEY},
    )


# The reads and writes of every step (several per step), compiled once per dialect.
_UPSERT_STEP = {
    "postgresql": Prepared(_upsert_step(postgresql), dialect="postgresql"),
    "sqlite": Prepared(_upsert_step(sqlite), dialect="sqlite"),
}
_STEPS = Prepared(
    select(steps_table)
    .where(steps_table.c.run_id == bindparam("run_id"))
    .order_by(steps_table.c.position)
)
_SET_STATUS = Prepared(
    update(runs_table)
    .where(runs_table.c.id == bindparam("run_id"))
    .values(status=bindparam("status"), note=bindparam("note"), updated_at=bindparam("updated_at"))
    .returning(*runs_table.c)
)
_INCIDENT_RUN = Prepared(
    select(runs_table).where(
        runs_table.c.incident_id == bindparam("incident_id"),
        runs_table.c.runbook == bindparam("runbook"),
    )
)
_INSERT_RUN = Prepared(insert(runs_table))
_INSERT_STEPS = Prepared(insert(steps_table))
# list_runs' filters, each a parameter of its own.
_FILTERS = {
    "incident_id": runs_table.c.incident_id == bindparam("incident_id"),
    "runbook": runs_table.c.runbook == bindparam("runbook"),
    "target": runs_table.c.target == bindparam("target"),
    "since": runs_table.c.created_at >= bindparam("since"),
}


@functools.cache
def _runs_where(statuses: int | None, filters: tuple[str, ...]) -> Prepared:
    """The runs matching `filters` (names of _FILTERS) and, given a count, a status among
    that many parameters (status_0, ...), oldest first: one statement per shape."""
    query = select(runs_table).order_by(runs_table.c.created_at, runs_table.c.id)
    for name in filters:
        query = query.where(_FILTERS[name])
    if statuses is not None:
        query = query.where(
            runs_table.c.status.in_([bindparam(f"status_{i}") for i in range(statuses)])
            if statuses
            else false()
        )
    return Prepared(query)


@functools.cache
def _recent_or_active(statuses: int) -> Prepared:
    """The runs of a runbook on a target created since a time or in a status among that
    many parameters (status_0, ...), oldest first: runs_on_target's two reads in one."""
    in_status = (
        runs_table.c.status.in_([bindparam(f"status_{i}") for i in range(statuses)])
        if statuses
        else false()
    )
    return Prepared(
        select(runs_table)
        .where(_FILTERS["runbook"], _FILTERS["target"], or_(_FILTERS["since"], in_status))
        .order_by(runs_table.c.created_at, runs_table.c.id)
    )


def make_run_reads() -> None:
    """Make the statements of list_runs' and runs_on_target's shapes on an alert's path, for
    any number of statuses, so that compile_all can compile them before the first alert."""
    for count in range(len(RunStatus) + 1):
        _runs_where(count, ("incident_id",))
        _runs_where(count, ("runbook", "target"))
        _runs_where(count, ())
        _recent_or_active(count)


def _statuses(values: Sequence[str] | None) -> dict[str, str]:
    return {f"status_{i}": value for i, value in enumerate(values or ())}


_GET_RUN = Prepared(select(runs_table).where(runs_table.c.id == bindparam("run_id")))
_RUNS_OF = Prepared(
    select(runs_table)
    .where(runs_table.c.incident_id == bindparam("incident_id"))
    .order_by(runs_table.c.created_at, runs_table.c.id)
)


def runs_of(conn: Connection, incident_id: str) -> list[Run]:
    """An incident's runs, oldest first."""
    return [_run(row) for row in _RUNS_OF.rows(conn, {"incident_id": incident_id})]


def read_run_with_steps(conn: Connection, run_id: str) -> tuple[Run, list[StepState]]:
    run = _get_run(conn, run_id)
    return run, [_step(row) for row in _STEPS.rows(conn, {"run_id": run_id})]


def update_run_row(
    conn: Connection, run_id: str, *, status: RunStatus, note: str, now: datetime
) -> Run:
    """The run's new status, and the run as it now stands (RETURNING: no read after it)."""
    row = _SET_STATUS.first(
        conn, {"run_id": run_id, "status": status.value, "note": note, "updated_at": now}
    )
    if row is None:
        raise NotFoundError(f"no run {run_id}")
    return _run(row)


def create_run_rows(conn: Connection, run: Run, states: list[StepState]) -> tuple[Run, bool]:
    if run.incident_id is not None:
        existing = _INCIDENT_RUN.first(
            conn, {"incident_id": run.incident_id, "runbook": run.runbook}
        )
        if existing is not None:
            return _run(existing), False
    # Two replicas racing past the check collide on uq_runs_incident_runbook; the retry in
    # _transact then finds the winner's run above.
    _INSERT_RUN.run(conn, _run_values(run))
    _INSERT_STEPS.run_many(conn, [_step_values(state) for state in states])
    return run, True


def as_read(run: Run, states: Sequence[StepState]) -> tuple[Run, list[StepState]]:
    """A run and its steps as a read of the rows just written would give them: JSON columns
    through a JSON round trip, times in UTC."""
    return (
        replace(
            run,
            context=json_roundtrip(dict(run.context)),
            created_at=as_utc(run.created_at),
            updated_at=as_utc(run.updated_at),
        ),
        [
            replace(
                state,
                args=json_roundtrip(dict(state.args)),
                output=json_roundtrip(dict(state.output)),
                started_at=None if state.started_at is None else as_utc(state.started_at),
                finished_at=None if state.finished_at is None else as_utc(state.finished_at),
            )
            for state in states
        ],
    )


def _get_run(conn: Connection, run_id: str) -> Run:
    row = _GET_RUN.first(conn, {"run_id": run_id})
    if row is None:
        raise NotFoundError(f"no run {run_id}")
    return _run(row)


def _run_values(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "runbook": run.runbook,
        "incident_id": run.incident_id,
        "cluster": run.cluster,
        "target": run.target,
        "requested_by": run.requested_by,
        "status": run.status.value,
        "dry_run": run.dry_run,
        "context": dict(run.context),
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "note": run.note,
    }


def _run(row: Record) -> Run:
    return Run(
        id=row["id"],
        runbook=row["runbook"],
        incident_id=row["incident_id"],
        cluster=row["cluster"],
        target=row["target"],
        requested_by=row["requested_by"],
        status=RunStatus(row["status"]),
        dry_run=bool(row["dry_run"]),
        context=row["context"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        note=row["note"],
    )


def _step_values(state: StepState) -> dict[str, Any]:
    return {
        "run_id": state.run_id,
        "step_id": state.step_id,
        "position": state.position,
        "status": state.status.value,
        "attempts": state.attempts,
        "args": dict(state.args),
        "output": dict(state.output),
        "error": state.error,
        "started_at": state.started_at,
        "finished_at": state.finished_at,
    }


def _step(row: Record) -> StepState:
    return StepState(
        run_id=row["run_id"],
        step_id=row["step_id"],
        position=row["position"],
        status=StepStatus(row["status"]),
        attempts=row["attempts"],
        args=row["args"],
        output=row["output"],
        error=row["error"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )

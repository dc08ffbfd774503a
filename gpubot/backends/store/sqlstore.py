"""SqlStore: everything that must survive a restart, in SQLite or PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from gpubot.backends.store.approvals import SqlApprovals
from gpubot.backends.store.audit import SqlAuditLog, as_stored
from gpubot.backends.store.chatrefs import SqlChatRefs
from gpubot.backends.store.database import create_store_engine
from gpubot.backends.store.evidence import SqlEvidence
from gpubot.backends.store.gpu_ledger import SqlGpuLedger
from gpubot.backends.store.incidents import (
    SqlIncidents,
    alerts_of,
    get_incident_row,
    incident_is_open,
)
from gpubot.backends.store.prepared import compile_all
from gpubot.backends.store.runs import (
    SqlRuns,
    as_read,
    create_run_rows,
    make_run_reads,
    read_run_with_steps,
    runs_of,
    update_run_row,
)
from gpubot.backends.store.signed_votes import SqlSignedVotes
from gpubot.backends.store.slackseen import SqlSlackSeen
from gpubot.domain.control.audit import AuditDraft, AuditEvent, ChainHead
from gpubot.domain.incidents.correlation import AlertRecord, Incident
from gpubot.domain.runbooks.runs import Run, RunStatus, RunView, StepState
from gpubot.errors import ConfigError, NotFoundError

if TYPE_CHECKING:
    from gpubot.ports import Store


class SqlStore(
    SqlIncidents,
    SqlRuns,
    SqlApprovals,
    SqlEvidence,
    SqlAuditLog,
    SqlChatRefs,
    SqlSlackSeen,
    SqlGpuLedger,
    SqlSignedVotes,
):
    """The Store port over one SQLAlchemy engine; every call is one transaction in a thread."""

    async def save_step(self, state: StepState, *, audit: AuditDraft | None = None) -> None:
        """A step's state, and with `audit` its event, in one transaction: a crash never
        leaves a step recorded without its audit event."""
        if audit is None:
            await SqlRuns.save_step(self, state)
            return
        stored = as_stored(audit)

        await self._run(lambda conn: self._step_with_event(conn, state, stored), write=True)

    async def save_step_read(self, state: StepState, *, audit: AuditDraft) -> RunView:
        """save_step with its event, then the run's state read back in the same
        transaction: the executor's next look at the run costs no transaction of its own."""
        stored = as_stored(audit)

        def both(conn: Connection) -> RunView:
            self._step_with_event(conn, state, stored)
            return _run_view(conn, state.run_id)

        return await self._run(both, write=True)

    async def create_run(
        self, run: Run, steps: Sequence[StepState], *, audit: AuditDraft | None = None
    ) -> tuple[Run, bool]:
        """With `audit`, the event goes in with the run (one transaction fewer per run), and
        only when the run was created."""
        if audit is None:
            return await SqlRuns.create_run(self, run, steps)
        stored, states = as_stored(audit), list(steps)

        return await self._run(
            lambda conn: self._run_with_event(conn, run, states, stored), write=True
        )

    async def create_run_read(
        self, run: Run, steps: Sequence[StepState], *, audit: AuditDraft
    ) -> tuple[RunView, bool]:
        """create_run with its event, and the run's state in the same transaction: the rows
        just written as a read would give them, or the existing run's, read, when the
        incident had one."""
        stored, states = as_stored(audit), list(steps)

        def both(conn: Connection) -> tuple[RunView, bool]:
            kept, created = self._run_with_event(conn, run, states, stored)
            if not created:
                return _run_view(conn, kept.id), False
            written, written_steps = as_read(run, states)
            is_open = None if run.incident_id is None else incident_is_open(conn, run.incident_id)
            return RunView(written, written_steps, is_open), True

        return await self._run(both, write=True)

    async def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        note: str,
        now: datetime,
        audit: AuditDraft | None = None,
    ) -> Run:
        """With `audit`, the run's new status and its event in one transaction."""
        if audit is None:
            return await SqlRuns.update_run(self, run_id, status=status, note=note, now=now)
        stored = as_stored(audit)

        def both(conn: Connection) -> Run:
            return self._status_with_event(conn, run_id, status, note, now, stored)

        return await self._run(both, write=True)

    async def end_run(
        self, run_id: str, *, status: RunStatus, note: str, now: datetime, audit: AuditDraft
    ) -> tuple[Run, list[AuditEvent], ChainHead | None]:
        """A run's end with its event, then its incident's events and the chain's head, in
        one transaction: the thread's summary and the anchor read what this end wrote."""
        stored = as_stored(audit)

        def both(conn: Connection) -> tuple[Run, list[AuditEvent], ChainHead | None]:
            changed = self._status_with_event(conn, run_id, status, note, now, stored)
            events = self._incident_events(conn, changed.incident_id) if changed.incident_id else []
            return changed, events, self._head(conn)

        return await self._run(both, write=True)

    async def incident_with_runs(
        self, incident_id: str
    ) -> tuple[Incident, list[Run], list[AlertRecord]]:
        """An incident, its runs and its alerts, read in one transaction (one snapshot)."""

        def read(conn: Connection) -> tuple[Incident, list[Run], list[AlertRecord]]:
            incident = get_incident_row(conn, incident_id)
            return incident, runs_of(conn, incident_id), alerts_of(conn, incident_id)

        return await self._run(read, write=False, snapshot=True)

    # The writes that carry their audit event, each for use inside a transaction.

    def _step_with_event(self, conn: Connection, state: StepState, stored: AuditDraft) -> None:
        self._upsert_step(conn, state)
        self._append(conn, stored)

    def _run_with_event(
        self, conn: Connection, run: Run, states: list[StepState], stored: AuditDraft
    ) -> tuple[Run, bool]:
        """The run and its steps, and the event only when the run was created."""
        kept, created = create_run_rows(conn, run, states)
        if created:
            self._append(conn, stored)
        return kept, created

    def _status_with_event(
        self,
        conn: Connection,
        run_id: str,
        status: RunStatus,
        note: str,
        now: datetime,
        stored: AuditDraft,
    ) -> Run:
        changed = update_run_row(conn, run_id, status=status, note=note, now=now)
        self._append(conn, stored)
        return changed

    async def run_state(self, run_id: str) -> RunView:
        """A run, its steps and whether its incident is open (None: no incident), read in
        one transaction (one snapshot): what the executor reads before each step."""

        return await self._run(lambda conn: _run_view(conn, run_id), write=False, snapshot=True)

    async def rehearse(self, *, now: datetime) -> None:
        """Every prepared statement compiled for this database, then an alert's run, made,
        stepped, ended and read back, in one transaction that is then rolled back:
        compiling a statement takes 0.3 to 3 ms, and the first run of each pays more than
        the next; this pays it before the first alert rather than during it. Nothing is
        kept; the chain's head is read and moved only inside the rolled-back transaction."""
        make_run_reads()
        compile_all(self._engine.dialect)
        run = Run(
            id="run-rehearsal",
            runbook="rehearsal",
            incident_id=None,
            cluster="rehearsal",
            target=None,
            requested_by="gpubot",
            status=RunStatus.RUNNING,
            dry_run=True,
            context={},
            created_at=now,
            updated_at=now,
        )
        step = StepState(run_id=run.id, step_id="rehearsal", position=0)
        event = as_stored(AuditDraft(ts=now, actor="gpubot", kind="rehearsal", run_id=run.id))

        def rehearse(conn: Connection) -> None:
            create_run_rows(conn, run, [step])
            self._upsert_step(conn, step)
            self._append(conn, event)
            _run_view(conn, run.id)
            update_run_row(conn, run.id, status=RunStatus.SUCCEEDED, note="", now=now)
            self._incident_events(conn, "inc-rehearsal")
            runs_of(conn, "inc-rehearsal")
            alerts_of(conn, "inc-rehearsal")
            with contextlib.suppress(NotFoundError):
                get_incident_row(conn, "inc-rehearsal")
            self._head(conn)
            raise _Rehearsed

        with contextlib.suppress(_Rehearsed):
            await self._run(rehearse, write=True)

    async def close(self) -> None:
        await asyncio.to_thread(self.dispose)


class _Rehearsed(Exception):
    """Rolls the rehearsal's transaction back."""


def _run_view(conn: Connection, run_id: str) -> RunView:
    run, states = read_run_with_steps(conn, run_id)
    if run.incident_id is None:
        return RunView(run, states, None)
    return RunView(run, states, incident_is_open(conn, run.incident_id))


if TYPE_CHECKING:
    # mypy proves here that SqlStore implements every method of the port.
    _conforms: type[Store] = SqlStore


def open_store(
    url: str, *, audit_key: bytes | None = None, schema: str | None = None, create: bool = True
) -> SqlStore:
    """Connect and create missing tables (idempotent); blocking, so call it at startup.

    `schema` (PostgreSQL only) puts the tables in that schema, created if missing: one
    database can then hold several bots, or one schema per test. `create=False` (commands
    that only read) creates and changes nothing: StoreMissingError if there is no database.
    """
    # Every store call is one transaction that is redone on a new connection when its
    # connection turns out dead (SqlDatabase._transact): no ping before each one; and it
    # begins its own SQLite transactions (no engine event).
    engine = create_store_engine(
        url, schema=schema, create=create, pre_ping=False, begin_event=False
    )
    store = SqlStore(engine=engine, audit_key=audit_key)
    try:
        if create:
            store.prepare(schema=schema)
        else:
            store.check_prepared()
    except OperationalError as exc:
        engine.dispose()
        where = engine.url.render_as_string(hide_password=True)
        reason = str(exc.orig).splitlines()[0] if exc.orig else str(exc)
        raise ConfigError(f"store.url: cannot open {where}: {reason}") from exc
    except BaseException:
        engine.dispose()
        raise
    return store

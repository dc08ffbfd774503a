"""Attacks on the audit trail with write access to the database: cut the tail and move the
head back, delete or reset the head, empty the tables. Each is caught by `gpubot audit
verify` (in-process and as the real command), on SQLite and PostgreSQL; appends refuse
instead of hiding it; and a click that loses an approval race is in the trail too."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from reliability_engine import make_bot
from reliability_procs import Procs, clean_env, free_port, pg_schema, serve, write_config
from sqlalchemy import Engine, create_engine, text

from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.control.audit import (
    GENESIS_HASH,
    Anchor,
    AuditDraft,
    AuditKeyError,
    AuditTrailError,
    key_id,
)
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.errors import ApprovalError
from gpubot.logs import redact_url

KEY = b"audit-key-for-the-tamper-tests"
NOW = datetime(2026, 11, 22, 1, 40, tzinfo=UTC)
SEALED = "it was moved or rewritten without the key"


def draft(n: int) -> AuditDraft:
    return AuditDraft(
        ts=NOW + timedelta(seconds=n),
        actor="U1" if n % 2 else "system",
        kind="step.finished",
        run_id="run-0000000001",
        step="cordon",
        action="node.cordon",
        target="gpu-node-07",
        args={"node": "gpu-node-07", "n": n},
        reason="runbook xid79 step cordon",
    )


@dataclass
class Db:
    """One database for one test (a SQLite file or a fresh PostgreSQL schema), the URL a
    gpubot config names it by, and raw SQL behind the bot's back."""

    url: str
    raw: Engine
    opened: list[SqlStore] = field(default_factory=list)

    def open(self, key: bytes | None = None) -> SqlStore:
        """A store on it: the bot starting, or starting again."""
        store = open_store(self.url, audit_key=key)
        self.opened.append(store)
        return store

    def sql(self, statement: str, **params: Any) -> int:
        with self.raw.begin() as conn:
            return conn.execute(text(statement), params).rowcount

    def rows(self, statement: str, **params: Any) -> list[tuple[Any, ...]]:
        with self.raw.begin() as conn:
            return [tuple(r) for r in conn.execute(text(statement), params)]

    def hash_of(self, seq: int) -> str:
        [(value,)] = self.rows("SELECT hash FROM audit WHERE seq = :seq", seq=seq)
        return str(value)

    def cut_tail(self, *, keep: int, move_head: bool) -> None:
        """Delete every event after seq `keep`; optionally point the head at `keep` too."""
        self.sql("DELETE FROM audit WHERE seq > :keep", keep=keep)
        if move_head:
            self.sql(
                "UPDATE audit_head SET seq = :seq, hash = :hash",
                seq=keep,
                hash=self.hash_of(keep) if keep else GENESIS_HASH,
            )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'gpubot.db'}"
        made = Db(url=url, raw=create_engine(url))
        yield made
        for store in made.opened:
            store.dispose()
        made.raw.dispose()
        return
    schema = pg_schema()
    made = Db(url=schema.url, raw=create_engine(schema.url))
    try:
        yield made
    finally:
        for store in made.opened:
            store.dispose()
        made.raw.dispose()
        schema.drop()


async def filled(db: Db, n: int, *, key: bytes | None = None) -> SqlStore:
    store = db.open(key)
    for i in range(1, n + 1):
        await store.append(draft(i))
    return store


def lines(store_problems: list[Any]) -> list[str]:
    return [str(p) for p in store_problems]


# -- the tail -------------------------------------------------------------------------------


async def test_cut_tail_with_the_head_left_behind(db: Db) -> None:
    """Deleting the newest events leaves a valid chain; the head still names the last one."""
    store = await filled(db, 12)
    newest = db.hash_of(12)
    db.cut_tail(keep=9, move_head=False)

    assert lines(await store.verify()) == [
        f"head says seq 12 / hash {newest[:12]}, last event is seq 9: events cut from the end"
    ]


async def test_cut_tail_and_head_moved_back_is_caught_by_the_seal(db: Db) -> None:
    """The attack that verified clean before: cut the tail, move the head to the new last
    event. With GPUBOT_AUDIT_KEY the head's seal no longer matches, and appends refuse
    rather than seal the moved head (which would hide the cut)."""
    store = await filled(db, 12, key=KEY)
    db.cut_tail(keep=9, move_head=True)

    assert lines(await store.verify()) == [
        f"head is not authenticated by GPUBOT_AUDIT_KEY (seq 9 / hash {db.hash_of(9)[:12]}): "
        + SEALED
    ]
    with pytest.raises(AuditTrailError, match="not authenticated by GPUBOT_AUDIT_KEY"):
        await store.append(draft(13))
    assert db.rows("SELECT max(seq) FROM audit") == [(9,)]


async def test_cut_tail_without_a_key_is_caught_by_an_anchor(db: Db) -> None:
    """Without a key nothing in the database can tell: the head recorded outside it (the
    thread's summary, the log) can. --min-seq and --expect-head hold the chain to it."""
    store = await filled(db, 12)
    anchor = Anchor(hash_prefix=db.hash_of(12)[:12], min_seq=12)
    assert await store.check(anchor=anchor) == ([], await store.head())
    db.cut_tail(keep=9, move_head=True)

    assert await store.verify() == []  # the limit: a consistent cut, and no key
    problems, _head = await store.check(anchor=anchor)
    assert lines(problems) == [
        "chain ends at seq 9, but seq 12 was written (--min-seq): events cut from the end",
        f"no event has hash {anchor.hash_prefix} (--expect-head): "
        "the events up to it were cut or rewritten",
    ]


async def test_a_replayed_seal_needs_the_anchor(db: Db) -> None:
    """Someone who saved the head row (seal included) at seq 9 can put it back after cutting
    later events: the seal is genuine. The anchor outside the database still catches it."""
    store = await filled(db, 9, key=KEY)
    [saved] = db.rows("SELECT seq, hash, seal FROM audit_head")
    for i in range(10, 13):
        await store.append(draft(i))
    db.cut_tail(keep=9, move_head=False)
    db.sql(
        "UPDATE audit_head SET seq = :s, hash = :h, seal = :m", s=saved[0], h=saved[1], m=saved[2]
    )

    assert await store.verify() == []
    problems, _head = await store.check(anchor=Anchor(min_seq=12))
    assert [p.problem.split(":")[0] for p in problems] == [
        "chain ends at seq 9, but seq 12 was written (--min-seq)"
    ]


async def test_head_moved_back_over_existing_events(db: Db) -> None:
    """A head behind the events is reported, and the next append refuses in one line (the
    seq it would take exists) instead of failing on the primary key."""
    store = await filled(db, 5)
    db.sql("UPDATE audit_head SET seq = 3, hash = :h", h=db.hash_of(3))

    assert lines(await store.verify()) == [
        f"head says seq 3 / hash {db.hash_of(3)[:12]}, last event is seq 5: the head was moved back"
    ]
    with pytest.raises(AuditTrailError, match="seq 4 already exists but the chain head says"):
        await store.append(draft(6))
    assert db.rows("SELECT seq FROM audit_head") == [(3,)]


# -- the head -------------------------------------------------------------------------------


async def test_deleted_head_is_reported_refused_and_never_recreated(db: Db) -> None:
    """Deleting the head row: verify says so, appends refuse, and a restart does not put a
    fresh head back (that would restart the chain at seq 1 and hide the deletion)."""
    store = await filled(db, 12)
    db.sql("DELETE FROM audit_head")
    missing = "chain head missing while 12 events exist (the audit_head row was deleted)"

    assert lines(await store.verify()) == [missing]
    with pytest.raises(AuditTrailError, match="missing while 12 events exist: refusing"):
        await store.append(draft(13))
    await store.close()

    restarted = db.open()
    assert db.rows("SELECT count(*) FROM audit_head") == [(0,)]
    assert lines(await restarted.verify()) == [missing]
    with pytest.raises(AuditTrailError, match="audit_head row is missing"):
        await restarted.append(draft(13))


async def test_reseal_is_the_deliberate_way_back_and_is_recorded(db: Db) -> None:
    """After the finding, `audit reseal` points the head at the last event, seals it and
    appends audit.resealed saying what the head was; then appends work again."""
    store = await filled(db, 4, key=KEY)
    db.sql("DELETE FROM audit_head")

    old, event = await store.reseal(
        AuditDraft(ts=NOW, actor="cli:ops", kind="audit.resealed", reason="INC-1 restore")
    )

    assert old is None
    assert (event.seq, event.kind, event.actor) == (5, "audit.resealed", "cli:ops")
    assert event.args["previous"] == {"head": "missing"}
    assert event.result["problems"] == [
        "chain head missing while 4 events exist (the audit_head row was deleted)"
    ]
    assert await store.verify() == []
    assert (await store.append(draft(6))).seq == 6


# -- emptied --------------------------------------------------------------------------------


async def test_emptied_event_table(db: Db) -> None:
    store = await filled(db, 7)
    head_hash = db.hash_of(7)
    db.sql("DELETE FROM audit")

    assert lines(await store.verify()) == [
        f"table empty but head says seq 7 / hash {head_hash[:12]}: every event was deleted"
    ]


async def test_both_tables_emptied(db: Db) -> None:
    """Emptying the events and the head looked like a new database: it is not one (the
    tables were there), so it is reported, before and after a restart, and not refilled."""
    store = await filled(db, 7)
    db.sql("DELETE FROM audit")
    db.sql("DELETE FROM audit_head")
    emptied = (
        "chain head missing and the table is empty: the trail was emptied "
        "(the audit_head row was deleted)"
    )

    assert lines(await store.verify()) == [emptied]
    await store.close()
    restarted = db.open()
    assert lines(await restarted.verify()) == [emptied]
    with pytest.raises(AuditTrailError):
        await restarted.append(draft(1))


async def test_emptied_and_head_reset_to_genesis_without_a_key(db: Db) -> None:
    """No key, every event deleted and the head put back to genesis: the runs remain."""
    store = await filled(db, 3)
    await store.create_run(_run(), [])
    db.sql("DELETE FROM audit")
    db.sql("UPDATE audit_head SET seq = 0, hash = :h", h=GENESIS_HASH)

    assert lines(await store.verify()) == ["table empty but 1 runs exist: every event was deleted"]


async def test_emptied_and_head_reset_to_genesis_with_a_key(db: Db) -> None:
    store = await filled(db, 3, key=KEY)
    db.sql("DELETE FROM audit")
    db.sql("UPDATE audit_head SET seq = 0, hash = :h", h=GENESIS_HASH)

    assert [p.problem.split(" (")[0] for p in await store.verify()] == [
        "head is not authenticated by GPUBOT_AUDIT_KEY"
    ]


# -- what keeps working ---------------------------------------------------------------------


async def test_appends_continue_after_a_restart(db: Db) -> None:
    """The head is kept across restarts: the chain goes on at the next seq, sealed."""
    store = await filled(db, 3, key=KEY)
    await store.close()

    restarted = db.open(KEY)
    assert [(await restarted.append(draft(i))).seq for i in (4, 5)] == [4, 5]
    assert await restarted.verify() == []
    head = await restarted.head()
    assert head is not None
    assert (head.seq, head.hash) == (5, db.hash_of(5))


async def test_a_database_from_before_seals_is_upgraded_once(db: Db) -> None:
    """audit_head without its seal column (an older gpubot): read-only verify says why the
    head is unsealed; the next start adds the column and seals the head, once."""
    store = await filled(db, 3, key=KEY)
    await store.close()
    db.sql("ALTER TABLE audit_head DROP COLUMN seal")

    reader = open_store(db.url, audit_key=KEY, create=False)
    db.opened.append(reader)
    assert [p.problem.split(": ", 1)[1] for p in await reader.verify()] == [
        "the database predates head seals; `gpubot serve` seals it once"
    ]
    assert open_store(db.url, create=False).dispose() is None  # no key: nothing to say

    upgraded = db.open(KEY)
    assert await upgraded.verify() == []
    assert (await upgraded.append(draft(4))).seq == 4
    assert await upgraded.verify() == []


# -- one key -------------------------------------------------------------------------------


async def test_an_appender_with_another_key_or_none_writes_nothing(db: Db) -> None:
    """The chain is sealed with KEY: a process without a key, or with another, is refused
    before its transaction writes (no row, head unmoved), so the chain never holds rows that
    one process cannot verify; the keyed process goes on."""
    keyed = await filled(db, 3, key=KEY)
    head = await keyed.head()
    for key, held in ((None, "no GPUBOT_AUDIT_KEY"), (b"a-stale-copy", "key id")):
        other = db.open(key)
        with pytest.raises(AuditKeyError, match=f"sealed with key id [0-9a-f]{{16}}.*{held}"):
            await other.check_key()
        with pytest.raises(AuditKeyError, match="refusing to write"):
            await other.append(draft(9))
        assert db.rows("SELECT count(*) FROM audit") == [(3,)]
        assert await keyed.head() == head
    assert (await keyed.append(draft(4))).seq == 4
    assert await keyed.verify() == []


async def test_resealing_with_a_new_key_adopts_it_on_the_record(db: Db) -> None:
    """Changing the key is deliberate: `audit reseal` under the new key names it in the head
    and records the old and new key ids; the old key can no longer append."""
    store = await filled(db, 2, key=KEY)
    new = db.open(b"the-rotated-key")
    _old, event = await new.reseal(draft(3))
    assert event.args["previous"]["key_id"] == key_id(KEY)
    assert event.result["key_id"] == key_id(b"the-rotated-key")
    await new.check_key()
    with pytest.raises(AuditKeyError):
        await store.append(draft(4))


async def test_a_database_from_before_key_ids_is_named_by_the_key_that_sealed_it(db: Db) -> None:
    """audit_head without key_id (an older gpubot): the next keyed start adds the column and
    names the head's key, because the head's seal proves it; from then on an unkeyed process
    is refused."""
    store = await filled(db, 2, key=KEY)
    await store.close()
    db.sql("ALTER TABLE audit_head DROP COLUMN key_id")
    upgraded = db.open(KEY)
    assert db.rows("SELECT key_id FROM audit_head") == [(key_id(KEY),)]
    assert (await upgraded.append(draft(3))).seq == 3
    with pytest.raises(AuditKeyError):
        await db.open(None).append(draft(4))
    assert await upgraded.verify() == []


# -- clicks ---------------------------------------------------------------------------------

CORDON = """
name: cordon-one
triggers: [{command: cordon-one}]
params: {node: {type: node, default: gpu-node-03}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"},
     approval: required, approvers: oncall}
"""


class Gate:
    """A store that, once armed, holds each replica's first read of an approval until both
    replicas have read it: the two clicks race for the compare-and-set every time."""

    def __init__(self, store: SqlStore, barrier: asyncio.Barrier) -> None:
        self._store, self._barrier, self.armed = store, barrier, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_approval(self, approval_id: str) -> Any:
        request = await self._store.get_approval(approval_id)
        if self.armed:
            self.armed = False
            await self._barrier.wait()
        return request


async def test_two_replicas_race_for_one_approval_and_both_clicks_are_audited(db: Db) -> None:
    """U1 clicks on one replica and U2 on another, both reading the request as pending:
    one click wins, the other is refused, and both are in the trail with who and why."""
    barrier = asyncio.Barrier(2)
    gates = [Gate(db.open(), barrier), Gate(db.open(), barrier)]
    sim = SimulatedCluster.default()
    bots = [
        make_bot(store=g, kube=sim.kube, agent=sim.agent, metrics=sim.metrics, runbook=CORDON)
        for g in gates
    ]  # type: ignore[arg-type]
    _plan, run = await bots[0].service.start_command_run(
        runbook="cordon-one", args={}, requested_by="U9", cluster="sim"
    )
    assert run is not None
    await bots[0].service.wait_idle()
    [ask] = bots[0].notifier.of("ask_approval")
    for g in gates:
        g.armed = True

    outcomes = await asyncio.gather(
        bots[0].service.vote(approval_id=ask.approval_id, user="U1", decision="approve"),
        bots[1].service.vote(approval_id=ask.approval_id, user="U2", decision="approve"),
        return_exceptions=True,
    )
    for bot in bots:
        await bot.service.wait_idle()

    refused = [o for o in outcomes if isinstance(o, ApprovalError)]
    assert len(refused) == 1
    assert "at the same moment" in str(refused[0])
    kinds = ("approval.vote", "approval.refused")
    clicks = [e for e in await gates[0].events(run_id=run.id) if e.kind in kinds]
    assert sorted((e.kind, e.result["accepted"]) for e in clicks) == [
        ("approval.refused", False),
        ("approval.vote", True),
    ]
    assert {e.actor for e in clicks} == {"U1", "U2"}
    [lost] = [e for e in clicks if e.kind == "approval.refused"]
    assert lost.result["status"] == "approved"  # what the winner left
    assert lost.reason == f"approval {ask.approval_id}"
    assert sim.snapshot().node("gpu-node-03").unschedulable is True  # cordoned once
    assert await gates[1].verify() == []


# -- the command ----------------------------------------------------------------------------


def gpubot(config: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpubot.cli", *args, "--config", str(config)],
        cwd=config.parent,
        env=clean_env(**env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def config_for(tmp_path: Path, url: str) -> Path:
    return write_config(tmp_path / "cfg.yaml", store={"url": url})


async def test_verify_command_names_the_moved_head_in_one_line(db: Db, tmp_path: Path) -> None:
    """`gpubot audit verify` on the cut-and-moved trail: exit 1, one line saying what."""
    store = await filled(db, 12, key=KEY)
    await store.close()
    db.cut_tail(keep=9, move_head=True)
    config = config_for(tmp_path, db.url)

    result = gpubot(config, "audit", "verify", GPUBOT_AUDIT_KEY=KEY.decode())

    assert result.returncode == 1, result.stdout
    assert result.stderr.splitlines() == [
        f"audit: database {redact_url(db.url)}",
        f"audit: head is not authenticated by GPUBOT_AUDIT_KEY (seq 9 / hash "
        f"{db.hash_of(9)[:12]}): {SEALED}",
    ]
    assert result.stdout == ""


async def test_verify_command_with_the_head_deleted(db: Db, tmp_path: Path) -> None:
    store = await filled(db, 12)
    await store.close()
    db.sql("DELETE FROM audit_head")

    result = gpubot(config_for(tmp_path, db.url), "audit", "verify")

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"audit: database {redact_url(db.url)}",
        "audit: chain head missing while 12 events exist (the audit_head row was deleted)",
    ]
    assert db.rows("SELECT count(*) FROM audit_head") == [(0,)]  # verify created nothing


async def test_verify_command_holds_the_chain_to_an_anchor(db: Db, tmp_path: Path) -> None:
    """--expect-head (12+ hex digits) and --min-seq, as the thread's summary prints them."""
    store = await filled(db, 12)
    await store.close()
    config = config_for(tmp_path, db.url)
    prefix = db.hash_of(12)[:12]

    ok = gpubot(config, "audit", "verify", "--min-seq", "12", "--expect-head", prefix.upper())
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("audit trail verified: 12 events, chain head seq 12 / ")
    assert f"reaches seq 12 and hash {prefix}" in ok.stdout

    db.cut_tail(keep=9, move_head=True)
    cut = gpubot(config, "audit", "verify", "--min-seq", "12", "--expect-head", prefix)
    assert cut.returncode == 1
    assert cut.stderr.splitlines() == [
        f"audit: database {redact_url(db.url)}",
        "audit: chain ends at seq 9, but seq 12 was written (--min-seq): events cut from the end",
        f"audit: no event has hash {prefix} (--expect-head): "
        "the events up to it were cut or rewritten",
    ]

    short = gpubot(config, "audit", "verify", "--expect-head", prefix[:8])
    assert short.returncode == 2
    assert "12 to 64 hex digits" in short.stderr


async def test_reseal_command_then_verify(db: Db, tmp_path: Path) -> None:
    store = await filled(db, 3)
    await store.close()
    db.sql("DELETE FROM audit_head")
    config = config_for(tmp_path, db.url)

    missing_reason = gpubot(config, "audit", "reseal")
    assert missing_reason.returncode == 2  # --reason is required
    resealed = gpubot(config, "audit", "reseal", "--reason", "restored after INC-7")
    assert resealed.returncode == 0, resealed.stderr
    assert "(was: missing)" in resealed.stdout
    assert db.rows("SELECT kind, reason FROM audit WHERE seq = 4") == [
        ("audit.resealed", "restored after INC-7")
    ]
    assert gpubot(config, "audit", "verify").returncode == 0
    again = gpubot(config, "audit", "reseal", "--reason", "twice")
    assert "nothing to reseal" in again.stdout
    assert db.rows("SELECT max(seq) FROM audit") == [(4,)]


@pytest.mark.parametrize("command", ["verify", "export"])
def test_missing_sqlite_database_is_one_line_and_not_created(tmp_path: Path, command: str) -> None:
    """No database file: exit 1 with one line, and neither the file nor its directory is
    created (verify used to create an empty one and call it verified)."""
    where = tmp_path / "data" / "gpubot.db"
    result = gpubot(config_for(tmp_path, f"sqlite:///{where}"), "audit", command)

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"gpubot: error: store.url: no database at {where} (nothing was created)"
    ]
    assert not (tmp_path / "data").exists()


@pytest.mark.postgres
@pytest.mark.parametrize("command", ["verify", "export"])
def test_postgres_schema_without_tables_is_one_line_and_not_created(
    tmp_path: Path, command: str
) -> None:
    schema = pg_schema()
    try:
        result = gpubot(config_for(tmp_path, schema.url), "audit", command)
        with schema.engine.begin() as conn:
            tables = conn.execute(
                text("SELECT count(*) FROM information_schema.tables WHERE table_schema = :s"),
                {"s": schema.schema},
            ).scalar()
    finally:
        schema.drop()

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubot: error: store.url: postgresql+psycopg://")
    assert line.endswith("has no gpubot tables (audit, audit_head missing; nothing was created)")
    assert tables == 0


def test_serve_logs_the_chain_head_at_start_and_stop(procs: Procs, tmp_path: Path) -> None:
    """An anchor outside the database: `serve` writes the head to its log both ways."""
    config = config_for(tmp_path, f"sqlite:///{tmp_path / 'gpubot.db'}")
    serve(procs, config, port=free_port())
    procs.stop()

    # The log is JSON lines on a pipe (`log.format: auto`); stdout shares the file.
    records = [
        json.loads(line)
        for line in (tmp_path / "gpubot.log").read_text().splitlines()
        if line.startswith("{")
    ]
    anchors = [r["message"] for r in records if r["logger"] == "gpubot.audit"]
    # A first start records the policy it loaded (policy.loaded, seq 1) before its anchor.
    events = open_store(f"sqlite:///{tmp_path / 'gpubot.db'}", create=False)
    try:
        [loaded] = asyncio.run(events.events())
    finally:
        asyncio.run(events.close())
    assert (loaded.seq, loaded.kind) == (1, "policy.loaded")
    head = f"audit chain head seq 1 hash {loaded.hash}"
    assert f"{head} (serve starting)" in anchors
    assert f"{head} (serve stopping)" in anchors


def _run() -> Run:
    return Run(
        id="run-0000000001",
        runbook="xid79",
        incident_id=None,
        cluster="sim",
        target="gpu-node-07",
        requested_by="U1",
        status=RunStatus.RUNNING,
        dry_run=False,
        context={},
        created_at=NOW,
        updated_at=NOW,
    )

"""Engine setup for SQLite and PostgreSQL, and the one-transaction-per-call helper."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateSchema

from gpubot.backends.store.grouping import GroupCommit
from gpubot.backends.store.prepared import send
from gpubot.backends.store.tables import audit, audit_head, metadata, runs
from gpubot.backends.store.trail_watch import CURRENT_SCHEMA, NOTIFY, TrailWatch, channel_for
from gpubot.domain.control.audit import GENESIS_HASH, ChainHead, head_is_sealed, key_id, seal_head
from gpubot.errors import ConfigError

T = TypeVar("T")

# Anything that is not JSON (a datetime in step output, say) is stored as its str(), the same
# rule gpubot.domain.control.audit.canonical applies, so hashes survive the round trip.
dumps = functools.partial(json.dumps, default=str)

_WRITE = "gpubot_write"  # connection execution option: this transaction will write
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# SQLSTATEs that mean "run the transaction again": serialization failure, deadlock.
_RETRY_SQLSTATES = frozenset({"40001", "40P01"})
# Backoff before redoing a transaction whose connection was lost; after these, the error
# goes up (the webhook answers 503, a run waits for the next tick).
_RECONNECT_DELAYS = (0.05, 0.2, 0.5)
# Store reads run on threads of their own, this many; with the writer's thread, a watch's
# connection and room for the odd caller on another thread, the pool keeps POOL_SIZE
# connections open. A pool smaller than the threads that use it opens a connection past
# its size for a read and closes it after (SQLite: a file open and four PRAGMAs; PostgreSQL:
# a new backend process), which a storm of reads did about every other alert.
READERS = 6
POOL_SIZE = READERS + 4


def json_roundtrip(value: Any) -> Any:
    """What `value` reads back as after a trip through a JSON column."""
    return json.loads(dumps(value))


def lock_id(name: str) -> int:
    """A stable signed 64-bit id for pg_advisory_xact_lock, computed here so order is known."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class StoreMissingError(ConfigError):
    """The database, or its tables, is not there, and the command must not create it."""


def create_store_engine(
    url: str,
    *,
    schema: str | None = None,
    create: bool = True,
    pre_ping: bool = True,
    begin_event: bool = True,
) -> Engine:
    """An engine for a SQLite file (or memory) or PostgreSQL through psycopg 3.

    `create=False`: a SQLite file that does not exist is a StoreMissingError, not created.
    `pre_ping=False` (the store, whose transactions are redone on a connection found dead):
    no round trip to test each PostgreSQL connection taken from the pool.
    `begin_event=False` (the store, which begins its SQLite transactions itself): no engine
    event sends SQLite's BEGIN. An engine with a connection event runs SQLAlchemy's event
    dispatch around every statement, about a tenth of a store call's CPU.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"store.url: not a database URL: {url!r}") from exc
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return _postgres_engine(parsed, schema=schema, pre_ping=pre_ping)
    if backend == "sqlite":
        if schema is not None:
            raise ConfigError("store: a schema applies to PostgreSQL only, not SQLite")
        return _sqlite_engine(parsed, create=create, begin_event=begin_event)
    raise ConfigError(f"store.url: unsupported database {backend!r} (use sqlite or postgresql)")


def _postgres_engine(parsed: URL, *, schema: str | None, pre_ping: bool) -> Engine:
    # psycopg 3 is the driver we ship; a bare postgresql:// would ask for psycopg2.
    parsed = parsed.set(drivername="postgresql+psycopg")
    connect_args: dict[str, Any] = {}
    if schema is not None:
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ConfigError(f"store: schema {schema!r} must match {_SCHEMA_NAME.pattern}")
        connect_args["options"] = f"-csearch_path={schema}"
    return create_engine(
        parsed,
        connect_args=connect_args,
        pool_pre_ping=pre_ping,
        pool_size=POOL_SIZE,
        json_serializer=dumps,
    )


def _sqlite_engine(parsed: URL, *, create: bool = True, begin_event: bool = True) -> Engine:
    database = parsed.database or ""
    memory = database in ("", ":memory:")
    if not memory and not parsed.query.get("uri"):
        path = Path(database).expanduser()
        if not create and not path.is_file():
            raise StoreMissingError(f"store.url: no database at {path} (nothing was created)")
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
    pooled: dict[str, Any] = (
        # One shared connection, or every thread would get its own empty memory database.
        {"poolclass": StaticPool} if memory else {"pool_size": POOL_SIZE}
    )
    engine = create_engine(
        parsed,
        connect_args={"check_same_thread": False},
        json_serializer=dumps,
        **pooled,
    )
    event.listen(engine, "connect", _sqlite_connect)
    if begin_event:
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take BEGIN away from the sqlite3 module (it skips it before SELECTs), so that
    # _sqlite_begin decides: see SQLAlchemy's "Transactions with SQLite" notes.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in (
        "PRAGMA journal_mode=WAL",  # readers do not block the writer
        # A commit is in the WAL file (the OS's cache) before the 2xx, so a killed process
        # loses nothing; only the fsync waits for the next checkpoint. A power loss may roll
        # the last commits back (never corrupt): Alertmanager sends them again. The fsync
        # per commit was most of the cost of a write (docs/development/benchmarks.md).
        "PRAGMA synchronous=NORMAL",
        "PRAGMA busy_timeout=5000",  # wait for another process's write instead of failing
        "PRAGMA foreign_keys=ON",
    ):
        cursor.execute(pragma)
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    _send_begin(conn, write=bool(conn.get_execution_options().get(_WRITE)))


def _send_begin(conn: Connection, *, write: bool) -> None:
    # A writer takes the write lock up front: upgrading a read lock later can fail at once
    # with "database is locked" instead of waiting out busy_timeout.
    send(conn, "BEGIN IMMEDIATE" if write else "BEGIN")


class SqlDatabase:
    """Runs each store call in a transaction in a worker thread: a read in its own, a write
    that queues behind another in one shared with those queued with it."""

    def __init__(self, *, engine: Engine, audit_key: bytes | None = None) -> None:
        self._engine = engine
        self._audit_key = audit_key
        self._postgres = engine.dialect.name == "postgresql"
        sqlite = engine.dialect.name == "sqlite"
        # SQLite's BEGIN: sent here unless the engine's begin event sends it.
        self._begin_here = sqlite and not event.contains(engine, "begin", _sqlite_begin)
        # Within one process, queue SQLite writers on a lock rather than in busy_timeout polls.
        self._lock = threading.Lock() if sqlite else None
        # A memory database is one shared connection: reads must queue too.
        self._lock_reads = sqlite and isinstance(engine.pool, StaticPool)
        # Writes queue for one thread of their own, and those that queue while one is under
        # way share the next transaction (group commit): in a storm, one BEGIN and COMMIT,
        # one thread hop, serve several steps' records. SQLite has one writer at a time
        # anyway (eight threads taking turns at its lock cost more than the writes;
        # benchmarks/intake.py). On PostgreSQL every audit append holds the chain's head row
        # until its commit, so the writes of every replica pass it one transaction at a time,
        # each with its WAL flush: a group holds it once and flushes once. A group that fails
        # (a deadlock between replicas' groups included) is written call by call, so each
        # caller gets its own result or error.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpubot-store-writer")
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="gpubot-store")
        self._writes: GroupCommit[Callable[[Connection], Any], Any] = GroupCommit(self._write_group)
        # On PostgreSQL each write group tells the other processes on the store's channel
        # (trail_watch): this process's token, so its own watch does not wake it.
        self._token = secrets.token_hex(8)
        self._channel: str | None = None
        self._watches: list[TrailWatch] = []

    async def _run(
        self, fn: Callable[[Connection], T], *, write: bool, snapshot: bool = False
    ) -> T:
        if write:
            result: T = await self._writes.submit(fn)
            return result
        call = functools.partial(self._transact, fn, write=write, snapshot=snapshot)
        context = contextvars.copy_context()  # as asyncio.to_thread passes it on
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, functools.partial(context.run, call))

    async def _write_group(self, fns: Sequence[Callable[[Connection], Any]]) -> list[Any]:
        def each(conn: Connection) -> list[Any]:
            done = [fn(conn) for fn in fns]
            if self._postgres:  # delivered at the commit, to the other processes' watches
                if self._channel is None:
                    self._channel = channel_for(conn.exec_driver_sql(CURRENT_SCHEMA).scalar())
                conn.execute(NOTIFY, {"channel": self._channel, "token": self._token})
            return done

        call = functools.partial(self._transact, each, write=True)
        return await asyncio.get_running_loop().run_in_executor(self._writer, call)

    def _transact(self, fn: Callable[[Connection], T], *, write: bool, snapshot: bool = False) -> T:
        """Run `fn` in one transaction; on a constraint race, run it once more from scratch;
        on a lost connection, up to three more times after a short backoff.

        `snapshot` asks PostgreSQL for one snapshot across statements (SQLite always has it).
        """
        reconnects, raced = 0, False
        while True:
            try:
                with self._guard(write=write), self._engine.connect() as conn:
                    if write:
                        conn.execution_options(**{_WRITE: True})
                    if snapshot and self._postgres:
                        conn.execution_options(isolation_level="REPEATABLE READ")
                    with conn.begin():
                        if self._begin_here:
                            _send_begin(conn, write=write)
                        return fn(conn)
            except DBAPIError as exc:
                if exc.connection_invalidated and reconnects < len(_RECONNECT_DELAYS):
                    # The connection died under us (a restart, a failover, a killed backend)
                    # and the pool has dropped it: redo the transaction on a new one.
                    time.sleep(_RECONNECT_DELAYS[reconnects])
                    reconnects += 1
                    continue
                if raced or not _retryable(exc):
                    raise
                raced = True

    def _guard(self, *, write: bool) -> AbstractContextManager[Any]:
        if self._lock is not None and (write or self._lock_reads):
            return self._lock
        return nullcontext()

    def prepare(self, *, schema: str | None = None) -> None:
        """Create what is missing (idempotent), safe when several replicas start at once."""

        def create(conn: Connection) -> None:
            if self._postgres:
                # CREATE TABLE races between replicas; PostgreSQL DDL is transactional.
                conn.execute(select(func.pg_advisory_xact_lock(lock_id("gpubot.schema"))))
                if schema is not None:
                    conn.execute(CreateSchema(schema, if_not_exists=True))
            found = inspect(conn)
            fresh = not any(found.has_table(t.name) for t in (audit, audit_head, runs))
            metadata.create_all(conn)
            # create_all adds tables, not the indexes a newer release declares on a table
            # that is already there.
            for table in metadata.sorted_tables:
                for index in table.indexes:
                    index.create(conn, checkfirst=True)
            prepare_audit_head(conn, fresh=fresh, key=self._audit_key)

        self._transact(create, write=True)
        self._head_columns = frozenset({"seal", "key_id"})

    def check_prepared(self) -> None:
        """For commands that only read (`audit verify`, `audit export`): the tables must be
        there already. Creates and changes nothing; StoreMissingError when they are not."""

        def check(conn: Connection) -> None:
            found = inspect(conn)
            missing = [t.name for t in (audit, audit_head) if not found.has_table(t.name)]
            if missing:
                where = self._engine.url.render_as_string(hide_password=True)
                raise StoreMissingError(
                    f"store.url: {where} has no gpubot tables ({', '.join(missing)} missing; "
                    "nothing was created)"
                )
            self._head_columns = frozenset(c["name"] for c in found.get_columns(audit_head.name))

        self._transact(check, write=False)

    # The head's columns: fewer on a database from before its seal or key_id, opened
    # read-only (no upgrade).
    _head_columns = frozenset({"seal", "key_id"})

    def watch_writes(self, wake: Callable[[], None]) -> bool:
        """Call `wake` (from a thread of the watch's own) soon after another process commits
        a write to this store: PostgreSQL only; False on SQLite, where `wake` is never
        called (one process writes the file)."""
        if not self._postgres:
            return False
        watch = TrailWatch(self._engine, token=self._token, wake=wake)
        self._watches.append(watch)
        watch.start()
        return True

    def dispose(self) -> None:
        for watch in self._watches:
            watch.stop()
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._engine.dispose()


def prepare_audit_head(conn: Connection, *, fresh: bool, key: bytes | None) -> None:
    """The head row goes in with the tables, once. A row missing from tables that already
    existed stays missing: re-creating it would restart the chain and hide whatever removed
    it (verify reports it; appends refuse; `gpubot audit reseal` is the deliberate way back).
    A database from before the head's seal or key_id gets the column here: its head sealed
    and named by this key when it holds one (a key_id only where the seal proves the key)."""
    named = key_id(key)
    if fresh:
        seal = seal_head(0, GENESIS_HASH, key=key)
        conn.execute(
            insert(audit_head).values(id=1, seq=0, hash=GENESIS_HASH, seal=seal, key_id=named)
        )
        return
    columns = {c["name"] for c in inspect(conn).get_columns(audit_head.name)}
    if "seal" not in columns:
        conn.execute(text("ALTER TABLE audit_head ADD COLUMN seal VARCHAR(64) DEFAULT '' NOT NULL"))
        head = conn.execute(select(audit_head.c.seq, audit_head.c.hash)).first()
        if head is not None and key:
            seal = seal_head(int(head.seq), str(head.hash), key=key)
            conn.execute(update(audit_head).where(audit_head.c.id == 1).values(seal=seal))
    if "key_id" not in columns:
        conn.execute(
            text("ALTER TABLE audit_head ADD COLUMN key_id VARCHAR(64) DEFAULT '' NOT NULL")
        )
        row = conn.execute(select(audit_head.c.seq, audit_head.c.hash, audit_head.c.seal)).first()
        if row is not None and key:
            sealed = ChainHead(int(row.seq), str(row.hash), str(row.seal))
            if head_is_sealed(sealed, key=key):
                conn.execute(update(audit_head).where(audit_head.c.id == 1).values(key_id=named))


def _retryable(exc: DBAPIError) -> bool:
    if isinstance(exc, IntegrityError):
        return True
    return getattr(exc.orig, "sqlstate", None) in _RETRY_SQLSTATES

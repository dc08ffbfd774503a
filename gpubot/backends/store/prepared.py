"""The store's hot statements, compiled once per dialect and run on the driver's cursor.

`Connection.execute` spends more per statement than SQLite spends running it: a cache key
for the statement, an execution context, a result object with its metadata. An alert's run
sends about sixty statements. A `Prepared` statement compiles its Core statement once per
dialect and then hands the driver the SQL and the parameters itself, applying the same bind
and result processors SQLAlchemy would (UTC datetimes, JSON, booleans), inside the
connection's own transaction. Driver errors come out as SQLAlchemy's exceptions
(IntegrityError, OperationalError, ...), with the connection invalidated on a disconnect,
so the store's retries read them as before.

Only statements whose parameters are known at compile time qualify: no expanding IN lists,
one row per INSERT.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import Executable

Processor = Callable[[Any], Any]
# A row as the store's readers take it: a dict from here, a RowMapping from Connection.execute.
Record = Mapping[Any, Any]


@dataclass
class _Form:
    """One statement compiled for one dialect."""

    sql: str
    positional: tuple[str, ...] | None  # the driver's parameter order; None: by name
    defaults: dict[str, Any]  # values bound in the statement itself
    binds: dict[str, Processor]  # the bind processor of each parameter that has one
    keys: tuple[str, ...]  # result columns, in order
    types: tuple[Any, ...]  # their SQLAlchemy types
    # The result processors, made from the driver's first cursor description.
    results: tuple[Processor | None, ...] | None = None


class Prepared:
    """A Core statement run without SQLAlchemy's per-statement machinery."""

    def __init__(self, statement: Executable, *, dialect: str | None = None) -> None:
        """`dialect`: the one dialect the statement is written for (an upsert in its own
        syntax), where it is not portable."""
        self._statement = statement
        self._dialect = dialect
        self._forms: dict[str, _Form] = {}
        _MADE.add(self)

    def rows(
        self, conn: Connection, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Every row, each a dict of column key to value."""
        return self._execute(conn, params)[0]

    def first(
        self, conn: Connection, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        found = self._execute(conn, params)[0]
        return found[0] if found else None

    def scalar(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row; None when there is no row."""
        row = self.first(conn, params)
        return None if row is None else next(iter(row.values()))

    def run(self, conn: Connection, params: Mapping[str, Any] | None = None) -> int:
        """A write; the driver's count of rows it touched."""
        return self._execute(conn, params)[1]

    def run_many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """A write of several rows, one executemany."""
        if not rows:
            return
        form = self._form(conn.dialect)
        sent = [self._parameters(form, row) for row in rows]
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cursor = raw.cursor()
        try:
            cursor.executemany(form.sql, cast(Any, sent))
        except conn.dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, form.sql, sent, exc, cursor) from exc
        finally:
            cursor.close()

    def _form(self, dialect: Dialect) -> _Form:
        form = self._forms.get(dialect.name)
        if form is None:
            form = self._forms[dialect.name] = _compile(self._statement, dialect)
        return form

    @staticmethod
    def _parameters(
        form: _Form, params: Mapping[str, Any] | None
    ) -> Sequence[Any] | Mapping[str, Any]:
        """The caller's values with the statement's own, processed, in the driver's order."""
        values = {**form.defaults, **params} if params else dict(form.defaults)
        for name, process in form.binds.items():
            values[name] = process(values[name])
        return values if form.positional is None else [values[name] for name in form.positional]

    def _execute(
        self, conn: Connection, params: Mapping[str, Any] | None
    ) -> tuple[list[dict[str, Any]], int]:
        dialect = conn.dialect
        form = self._form(dialect)
        sent = self._parameters(form, params)
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cursor = raw.cursor()
        try:
            cursor.execute(form.sql, sent)
            fetched = cursor.fetchall() if cursor.description else []
            count = cursor.rowcount
            processors = form.results
            if processors is None and cursor.description:
                processors = form.results = _result_processors(form, dialect, cursor.description)
        except dialect.loaded_dbapi.Error as exc:
            raise _wrapped(conn, form.sql, sent, exc, cursor) from exc
        finally:
            cursor.close()
        keys = form.keys
        if not fetched:
            return [], count
        assert processors is not None
        return [
            dict(
                zip(
                    keys,
                    [v if p is None else p(v) for p, v in zip(processors, row, strict=True)],
                    strict=True,
                )
            )
            for row in fetched
        ], count


# Every prepared statement made so far, for compile_all.
_MADE: weakref.WeakSet[Prepared] = weakref.WeakSet()


def compile_all(dialect: Dialect) -> int:
    """Compile every prepared statement made so far for `dialect` (at start-up, so that the
    first alert does not pay for it); how many there are."""
    made = [p for p in list(_MADE) if p._dialect in (None, dialect.name)]
    for prepared in made:
        prepared._form(dialect)
    return len(made)


def send(conn: Connection, sql: str) -> None:
    """A statement without parameters or results (BEGIN), straight to the driver."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise _wrapped(conn, sql, (), exc, cursor) from exc
    finally:
        cursor.close()


def _compile(statement: Executable, dialect: Dialect) -> _Form:
    compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
    assert isinstance(compiled, SQLCompiler)
    defaults: dict[str, Any] = {}
    binds: dict[str, Processor] = {}
    for bind, name in compiled.bind_names.items():
        if bind.expanding or bind.literal_execute:
            raise ValueError(f"{name}: a prepared statement cannot expand a parameter")
        if not bind.required:
            defaults[name] = bind.effective_value
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binds[name] = process
    # A SELECT's columns, or what an INSERT, UPDATE or DELETE returns (RETURNING).
    selected = getattr(statement, "selected_columns", None)
    if selected is None and getattr(statement, "_returning", None):
        selected = statement.exported_columns  # type: ignore[attr-defined]
    columns = list(selected) if selected is not None else []
    return _Form(
        sql=compiled.string,
        positional=tuple(compiled.positiontup or ()) if dialect.positional else None,
        defaults=defaults,
        binds=binds,
        keys=tuple(column.key for column in columns),
        types=tuple(column.type for column in columns),
    )


def _result_processors(
    form: _Form, dialect: Dialect, description: Sequence[Sequence[Any]]
) -> tuple[Processor | None, ...]:
    if len(description) != len(form.types):
        raise ValueError(f"expected {len(form.types)} columns, the driver gave {len(description)}")
    return tuple(
        type_.dialect_impl(dialect).result_processor(dialect, column[1])
        for type_, column in zip(form.types, description, strict=True)
    )


def _wrapped(conn: Connection, sql: str, params: Any, exc: Exception, cursor: Any) -> DBAPIError:
    """The driver's error as SQLAlchemy raises it; a lost connection invalidated, so the
    store's transaction is redone on a new one."""
    dialect = conn.dialect
    lost = dialect.is_disconnect(cast(Any, exc), conn.connection.dbapi_connection, cursor)
    if lost:
        conn.invalidate(exc)
    wrapped = DBAPIError.instance(
        sql,
        params,
        exc,
        dialect.loaded_dbapi.Error,
        connection_invalidated=lost,
        dialect=dialect,
    )
    assert isinstance(wrapped, DBAPIError)
    return wrapped

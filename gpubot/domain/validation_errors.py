"""One line from a pydantic ValidationError: the field path and what is wrong with it."""

from __future__ import annotations

from pydantic import ValidationError


def first_problem(exc: ValidationError, *, prefix: str = "") -> str:
    """`field.path: reason (and N more)`; the reason alone when the error has no field."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{prefix}{loc}: {msg}{more}" if loc else f"{prefix}{msg}{more}"

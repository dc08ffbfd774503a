"""Instants in UTC: what the store keeps and what the intake compares."""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(value: datetime) -> datetime:
    """The same instant in UTC; a naive value is taken to be UTC already."""
    # A naive value is a caller bug, but guessing UTC beats storing local time silently.
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)

"""What the store holds right now, counted: the gauges `/metrics` reads at each scrape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class StateCounts:
    """Counts by status, read in one transaction of a few aggregate queries."""

    incidents_open: int = 0
    runs: Mapping[str, int] = field(default_factory=dict)  # unfinished run status → runs
    approvals_pending: int = 0
    oldest_pending_approval: datetime | None = None  # created_at of the oldest pending one

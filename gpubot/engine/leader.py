"""AlwaysLeader: the Leadership of a single replica (SQLite, the demo, the simulated cluster)."""

from __future__ import annotations


class AlwaysLeader:
    """One process alone may always start steps; HA replicas use a Lease instead."""

    def is_leader(self) -> bool:
        return True

"""AlwaysLeader (a single replica: SQLite, the demo) and NeverLeader (the break-glass CLI)."""

from __future__ import annotations


class AlwaysLeader:
    """One process alone may always start steps; HA replicas use a Lease instead."""

    def is_leader(self) -> bool:
        return True

    def leads(self, key: str) -> bool:
        return True

    def term(self) -> int | None:
        return 0


class NeverLeader:
    """A process that records decisions in the store but never starts a step itself (the
    break-glass CLI): the running bot's leader carries them out."""

    def is_leader(self) -> bool:
        return False

    def leads(self, key: str) -> bool:
        return False

    def term(self) -> int | None:
        return None

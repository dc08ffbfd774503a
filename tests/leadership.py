"""A Leadership port the test switches, as a Lease is won or lost, or (with `keys`) as a
replica holds only some shards."""

from __future__ import annotations

from collections.abc import Callable


class Flag:
    """Leads everything while `leader` is true; with `owns`, only the keys it accepts."""

    def __init__(self, leader: bool = True, owns: Callable[[str], bool] | None = None) -> None:
        self.leader = leader
        self.owns = owns
        self.terms = 0  # bump to say the replica gained something to lead

    def is_leader(self) -> bool:
        return self.leader

    def leads(self, key: str) -> bool:
        return self.leader and (self.owns is None or self.owns(key))

    def term(self) -> int | None:
        return self.terms if self.leader else None

"""Held steps in this process: what would wake each one, and the storm summary they share."""

from __future__ import annotations

from dataclasses import dataclass

# Cordons: (slots the fleet view saw freed, reservations dropped); drains: (drains and runs
# ended here, 0). A held step is re-checked only once its key has changed.
WakeKey = tuple[int, int]


@dataclass(frozen=True)
class HeldStep:
    run_id: str
    incident_id: str | None
    cluster: str
    runbook: str
    step: str
    node: str
    blast: str  # "cordon" | "drain": what frees its slot
    reason: str
    key: WakeKey  # what the world looked like when it was held


class Holds:
    """Steps the blast-radius cap holds. A held step is re-checked only once something that
    can free a slot has changed since it was held (its wake key), never on a timer alone."""

    def __init__(self) -> None:
        self._held: dict[str, HeldStep] = {}
        self.changes = 0  # bumped whenever the set of held steps or their reasons change

    def hold(self, held: HeldStep) -> None:
        before = self._held.get(held.run_id)
        self._held[held.run_id] = held
        if before is None or before.reason != held.reason:
            self.changes += 1

    def clear(self, run_id: str) -> None:
        if self._held.pop(run_id, None) is not None:
            self.changes += 1

    def get(self, run_id: str) -> HeldStep | None:
        return self._held.get(run_id)

    def clusters(self) -> set[str]:
        return {h.cluster for h in self._held.values()}

    def held(self) -> list[HeldStep]:
        return sorted(self._held.values(), key=lambda h: (h.cluster, h.node, h.run_id))

    def __len__(self) -> int:
        return len(self._held)

"""How long a passed server-side dry-run of a cordon (or uncordon) stands for the next one.

A plan sends the change it describes with `dryRun=All`, so RBAC or an admission webhook that
would refuse it shows as a problem before anyone approves. What that proves (the service
account may patch Nodes' `spec.unschedulable`, admission lets it through) holds for every
node's cordon alike, so in a storm of cordons one dry-run per `seconds` stands for the rest.
A refusal is never remembered: the next plan sends its own dry-run. The real write still
meets every check, so a node-specific admission rule refuses it when the step runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

MEMO_SECONDS = 30.0


class DryRunMemo:
    """When a dry-run of each kind of change last passed."""

    def __init__(
        self, *, seconds: float = MEMO_SECONDS, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._seconds = seconds
        self._now = now
        self._passed: dict[Hashable, float] = {}

    def passed(self, kind: Hashable) -> bool:
        """True while a dry-run of `kind` that passed is younger than `seconds`."""
        at = self._passed.get(kind)
        return at is not None and self._now() - at < self._seconds

    def note(self, kind: Hashable) -> None:
        """A dry-run of `kind` has just passed."""
        self._passed[kind] = self._now()

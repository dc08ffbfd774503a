"""Safety policy: blast-radius caps and attempt caps that hold a step instead of running it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from gpubot.domain.approvals import DEFAULT_EXPIRY, ApproverGroup


@dataclass(frozen=True)
class BlastRadius:
    """Caps on how much of the GPU fleet the bot may take out of service at once."""

    max_cordoned_fraction: float = 0.25
    max_cordoned_count: int = 4
    max_concurrent_drains: int = 1

    def cordon_limit(self, fleet_size: int) -> int:
        # The epsilon keeps 100 x 0.29 (28.999999999999996 in binary) at 29 nodes.
        by_fraction = math.floor(fleet_size * self.max_cordoned_fraction + 1e-9)
        return max(0, min(self.max_cordoned_count, by_fraction))


@dataclass(frozen=True)
class AttemptCap:
    """At most `max_attempts` runs of one runbook on one node within `window`."""

    max_attempts: int = 3
    window: timedelta = timedelta(hours=24)


def check_cordon(
    *, policy: BlastRadius, fleet_size: int, cordoned: set[str], node: str
) -> str | None:
    """Return why cordoning `node` would pass the cap, or None if it may go ahead."""
    if node in cordoned:
        return None  # already out of service: no change to the blast radius
    limit = policy.cordon_limit(fleet_size)
    if len(cordoned) + 1 > limit:
        return (
            f"blast radius: {len(cordoned)} of {fleet_size} GPU nodes are already cordoned; "
            f"the cap is {limit} ({policy.max_cordoned_count} nodes or "
            f"{policy.max_cordoned_fraction:.0%} of the fleet)"
        )
    return None


def check_drain(*, policy: BlastRadius, draining: set[str], node: str) -> str | None:
    if node in draining:
        return None
    if len(draining) + 1 > policy.max_concurrent_drains:
        return (
            f"blast radius: {len(draining)} drain(s) already in progress "
            f"({', '.join(sorted(draining))}); the cap is {policy.max_concurrent_drains}"
        )
    return None


def check_attempts(*, cap: AttemptCap, recent_runs: int, runbook: str, node: str) -> str | None:
    if recent_runs >= cap.max_attempts:
        hours = cap.window.total_seconds() / 3600
        return (
            f"attempt cap: {runbook} already ran {recent_runs} times on {node} in the last "
            f"{hours:g} h (cap {cap.max_attempts}); a human must look at this node"
        )
    return None


@dataclass(frozen=True)
class Policy:
    """Everything that decides whether a step may run now, and who may say yes."""

    groups: Mapping[str, ApproverGroup] = field(default_factory=dict)
    default_group: str = "oncall"
    approval_expiry: timedelta = DEFAULT_EXPIRY
    blast: BlastRadius = field(default_factory=BlastRadius)
    attempts: AttemptCap = field(default_factory=AttemptCap)

"""Safety policy: blast-radius caps and attempt caps that hold a step instead of running it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from gpubot.domain.control.approvals import DEFAULT_EXPIRY, ApproverGroup
from gpubot.domain.control.pools import DEFAULT_POOL, Pool, PoolChoice, choose_pool
from gpubot.domain.gpus.escalation import EscalationPolicy


@dataclass(frozen=True)
class BlastRadius:
    """Caps on how much of the GPU fleet the bot may take out of service at once."""

    max_cordoned_fraction: float = 0.25
    max_cordoned_count: int = 4
    max_concurrent_drains: int = 1

    def cordon_limit(self, fleet_size: int) -> int:
        """The smaller of the count and the fraction of the fleet (rounded down), but at
        least one node when both caps are above zero: 25% of a 3-node fleet must still let
        the bot quarantine the one node that lost its GPU."""
        # The epsilon keeps 100 x 0.29 (28.999999999999996 in binary) at 29 nodes.
        by_fraction = math.floor(fleet_size * self.max_cordoned_fraction + 1e-9)
        if self.max_cordoned_fraction > 0 and fleet_size > 0:
            by_fraction = max(1, by_fraction)
        return max(0, min(self.max_cordoned_count, by_fraction))

    def zero_allowance(self, fleet_size: int | None = None) -> str | None:
        """Why the cap lets the bot cordon or drain nothing at all, or None when it allows
        some: said at start-up and in every step it holds, so nobody waits on it unknowingly."""
        reasons = []
        if self.max_cordoned_count <= 0:
            reasons.append("policy.blast_radius.max_cordoned_count is 0")
        if self.max_cordoned_fraction <= 0:
            reasons.append("policy.blast_radius.max_cordoned_fraction is 0")
        if fleet_size == 0:
            reasons.append("the cluster reports no GPU nodes")
        if reasons:
            return "the blast-radius cap allows no cordon at all: " + "; ".join(reasons)
        return None

    def warnings(self) -> list[str]:
        """Settings that make the bot unable to quarantine or drain anything by itself."""
        found = [z] if (z := self.zero_allowance()) else []
        if self.max_concurrent_drains <= 0:
            found.append(
                "the blast-radius cap allows no drain at all: "
                "policy.blast_radius.max_concurrent_drains is 0"
            )
        return found


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
        reason = (
            f"blast radius: {len(cordoned)} of {fleet_size} GPU nodes are already cordoned; "
            f"the cap is {limit} ({policy.max_cordoned_count} nodes or "
            f"{policy.max_cordoned_fraction:.0%} of the fleet)"
        )
        if limit == 0:
            reason += f"; {policy.zero_allowance(fleet_size) or 'it allows no cordon at all'}"
        return reason
    return None


def check_drain(*, policy: BlastRadius, draining: set[str], node: str) -> str | None:
    if node in draining:
        return None
    if len(draining) + 1 > policy.max_concurrent_drains:
        if policy.max_concurrent_drains <= 0:
            return (
                "blast radius: the cap allows no drain at all "
                "(policy.blast_radius.max_concurrent_drains is 0)"
            )
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
    escalation: EscalationPolicy = field(default_factory=EscalationPolicy)  # from GPU history
    pools: tuple[Pool, ...] = ()  # policy.pools, first match wins
    default_pool: Pool = field(default_factory=lambda: Pool(DEFAULT_POOL))
    digest: str = ""  # policy_digest of the policy as loaded ("" when built in code)
    # The policy block as loaded (what the digest is of), recorded with it so that the next
    # start that loads a different one can say what changed.
    document: Mapping[str, Any] = field(default_factory=dict)
    # A pool's own caps, counted within the pool on top of `blast` across the fleet.
    pool_blast: Mapping[str, BlastRadius] = field(default_factory=dict)
    # A pool's own escalation thresholds and DCGM diagnostics level, in place of the
    # global ones for its nodes (a pool not named here follows the global block).
    pool_escalation: Mapping[str, EscalationPolicy] = field(default_factory=dict)
    pool_diag_level: Mapping[str, int] = field(default_factory=dict)

    def pool_for(self, *, cluster: str, labels: Mapping[str, str]) -> PoolChoice:
        """The pool a node is in now (its cluster and its Node labels), and why."""
        return choose_pool(self.pools, self.default_pool, cluster=cluster, labels=labels)

    def escalation_of(self, pool: str | None) -> EscalationPolicy:
        return self.pool_escalation.get(pool or "", self.escalation)

    @property
    def per_pool(self) -> bool:
        """Whether any pool sets its own caps, escalation or diagnostics level."""
        return bool(self.pool_blast or self.pool_escalation or self.pool_diag_level)


def check_pool_cordon(
    *, pool: str, policy: BlastRadius, pool_size: int, cordoned: set[str], node: str
) -> str | None:
    """check_cordon within one pool: its own cap over its own GPU nodes."""
    reason = check_cordon(policy=policy, fleet_size=pool_size, cordoned=cordoned, node=node)
    if reason is None:
        return None
    return f"pool {pool}: " + reason.replace("GPU nodes", f"GPU nodes of pool {pool}").replace(
        "policy.blast_radius", f"pool {pool}'s blast_radius"
    ).replace("of the fleet", "of the pool")


def check_pool_drain(
    *, pool: str, policy: BlastRadius, draining: set[str], node: str
) -> str | None:
    """check_drain within one pool: its own cap on drains of its own nodes at once."""
    reason = check_drain(policy=policy, draining=draining, node=node)
    if reason is None:
        return None
    return f"pool {pool}: " + reason.replace("policy.blast_radius", f"pool {pool}'s blast_radius")

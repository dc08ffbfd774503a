"""The engine's dependency bundle: the store, runbooks, clusters, chat, clock and policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpubot.domain.control.safety_caps import Policy
from gpubot.domain.incidents.correlation import unlabelled_cluster
from gpubot.domain.runbooks.spec import Runbook
from gpubot.engine.leader import AlwaysLeader
from gpubot.engine.registry import Registry
from gpubot.engine.telemetry import NoTally, Tally
from gpubot.ports import (
    ChatNotifier,
    Clock,
    ClusterPorts,
    Leadership,
    SharedCaps,
    Store,
    VoteSigners,
)


@dataclass(frozen=True)
class Engine:
    """Everything the executor and the service act through."""

    store: Store
    registry: Registry
    runbooks: Mapping[str, Runbook]
    clusters: Mapping[str, ClusterPorts]
    notifier: ChatNotifier
    clock: Clock
    policy: Policy
    leadership: Leadership = field(default_factory=AlwaysLeader)  # who may start steps
    tally: Tally = field(default_factory=NoTally)  # counters of step outcomes and run ends
    default_cluster: str | None = None  # config default_cluster: see alert_cluster
    signers: VoteSigners | None = None  # operator keys for signed break-glass votes
    evidence_keep_days: int = 0  # evidence.keep_days: older bundles are pruned (0: kept)
    # Replicas executing side by side (leader_election.shards): the caps they all count, and
    # this replica's name in them.
    shared_caps: SharedCaps | None = None
    identity: str = ""

    @property
    def alert_cluster(self) -> str | None:
        """The cluster of an alert without a `cluster` label (None: it names none)."""
        return unlabelled_cluster(default=self.default_cluster, configured=list(self.clusters))

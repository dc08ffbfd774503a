"""build_app(): the one place that picks real, simulated or fake adapters."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

from gpubot.actions.base import ClusterPorts
from gpubot.backends.console import ConsoleNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store import open_store
from gpubot.config import Settings
from gpubot.domain.approvals import ApproverGroup
from gpubot.domain.policy import AttemptCap, BlastRadius, Policy
from gpubot.domain.runbook_loader import LoadedRunbook, load_dirs
from gpubot.engine.clock import SystemClock
from gpubot.engine.recorder import Engine
from gpubot.engine.registry import Registry, builtin_registry
from gpubot.engine.service import GpubotService
from gpubot.engine.validation import validate
from gpubot.errors import ConfigError, RunbookError
from gpubot.ports import ChatNotifier, Clock, Store


def shipped_runbooks_dir() -> Path:
    """The runbooks installed with the package (the repo's runbooks/ directory)."""
    return Path(str(resources.files("gpubot.shipped_runbooks")))


def build_policy(settings: Settings) -> Policy:
    p = settings.policy
    groups = {
        name: ApproverGroup(name=name, users=frozenset(g.users), usergroups=frozenset(g.usergroups))
        for name, g in p.groups.items()
    }
    return Policy(
        groups=groups,
        default_group=p.default_group,
        approval_expiry=p.approval_expiry,
        blast=BlastRadius(**p.blast_radius.model_dump()),
        attempts=AttemptCap(max_attempts=p.attempts.max_attempts, window=p.attempts.window),
    )


def load_runbooks(
    settings: Settings, *, registry: Registry, policy: Policy | None = None
) -> list[LoadedRunbook]:
    dirs = ([shipped_runbooks_dir()] if settings.runbooks.builtin else []) + list(
        settings.runbooks.dirs
    )
    loaded = load_dirs(dirs)
    problems = [p for item in loaded for p in validate(item, registry=registry, policy=policy)]
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise RunbookError(problems[0] + more)
    return loaded


def build_clusters(settings: Settings) -> dict[str, ClusterPorts]:
    clusters: dict[str, ClusterPorts] = {}
    for c in settings.clusters:
        if c.backend != "simulated":
            raise ConfigError(
                f"clusters.{c.name}.backend: {c.backend!r} is not available in this build; "
                "use backend: simulated"
            )
        sim = SimulatedCluster.default(name=c.name, state_path=c.state_file)
        clusters[c.name] = ClusterPorts(name=c.name, kube=sim, agent=sim, metrics=sim)
    return clusters


@dataclass
class App:
    settings: Settings
    service: GpubotService
    store: Store
    notifier: ChatNotifier
    clusters: Mapping[str, ClusterPorts]
    runbooks: list[LoadedRunbook] = field(default_factory=list)

    async def aclose(self) -> None:
        await self.service.wait_idle()
        await self.store.close()


def build_app(
    settings: Settings,
    *,
    store: Store | None = None,
    notifier: ChatNotifier | None = None,
    clusters: Mapping[str, ClusterPorts] | None = None,
    clock: Clock | None = None,
    registry: Registry | None = None,
    out: TextIO | None = None,
) -> App:
    registry = registry or builtin_registry()
    policy = build_policy(settings)
    loaded = load_runbooks(settings, registry=registry, policy=policy)
    key = settings.audit_key.get_secret_value().encode() if settings.audit_key else None
    clusters = clusters or build_clusters(settings)  # refuse a bad config before writing
    store = store or open_store(settings.store.url, audit_key=key)
    notifier = notifier or ConsoleNotifier(out or sys.stdout)
    engine = Engine(
        store=store,
        registry=registry,
        runbooks={item.runbook.name: item.runbook for item in loaded},
        clusters=clusters,
        notifier=notifier,
        clock=clock or SystemClock(),
        policy=policy,
    )
    return App(
        settings=settings,
        service=GpubotService(engine, dry_run=settings.dry_run),
        store=store,
        notifier=notifier,
        clusters=clusters,
        runbooks=loaded,
    )

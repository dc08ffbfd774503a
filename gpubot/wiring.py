"""build_app(): the one place that picks real, simulated or fake adapters."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO, cast

from gpubot.backends.console import ConsoleNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.store import SqlStore, open_store
from gpubot.config import ClusterSettings, ClusterSlurmSettings, Settings
from gpubot.domain.fleet.cluster import Sample
from gpubot.domain.runbooks.loader import LoadedRunbook
from gpubot.engine.clock import SystemClock
from gpubot.engine.counted_ports import counted_clusters
from gpubot.engine.deps import Engine
from gpubot.engine.leader import AlwaysLeader
from gpubot.engine.registry import Registry, builtin_registry
from gpubot.engine.service import GpubotService
from gpubot.errors import ConfigError, InputError, PermanentStepError
from gpubot.loaded_rules import build_policy, build_reclaim, load_runbooks
from gpubot.ports import (
    ChatNotifier,
    Clock,
    ClusterPorts,
    KubeApi,
    Leadership,
    Metrics,
    NodeAgent,
    ReportPoster,
    Store,
    TokenIssuer,
    VoteSigners,
)
from gpubot.reports.collect import IdleReporter
from gpubot.reports.jobs import IdleReportJob
from gpubot.reports.scheduler import ReportScheduler
from gpubot.web.metrics import OutboxReading, Watched, WebMetrics

if TYPE_CHECKING:
    from gpubot.agent.dcgm import Diagnostics
    from gpubot.agent.driver import AgentDriver
    from gpubot.agent.evidence import Evidence
    from gpubot.slack.app import SlackParts
    from gpubot.web.agent_identity import AgentEventAuth


def build_clusters(settings: Settings) -> dict[str, ClusterPorts]:
    clusters: dict[str, ClusterPorts] = {}
    for c in settings.clusters:
        if c.backend == "kubernetes":
            clusters[c.name] = kubernetes_cluster(settings, c)
            continue
        if c.backend == "slurm":
            clusters[c.name] = slurm_cluster(settings, c)
            continue
        sim = SimulatedCluster.default(name=c.name, state_path=c.state_file)
        agent = node_agent(settings, c, kube=sim.kube)
        clusters[c.name] = replace(sim.ports(), agent=agent) if agent else sim.ports()
    return clusters


def kubernetes_cluster(settings: Settings, c: ClusterSettings) -> ClusterPorts:
    """The official client for the cluster's context; its GPUs through the node agents."""
    from gpubot.backends.kube import KubernetesKubeApi, api_client_for

    if c.agent is None:
        raise ConfigError(
            f"clusters.{c.name}: a kubernetes cluster needs agent (e.g. agent: {{port: 9400}}) "
            "to read and reset its GPUs"
        )
    api = api_client_for(
        cluster=c.name, context=c.context, kubeconfig=c.kubeconfig, in_cluster=c.in_cluster
    )
    kube = KubernetesKubeApi(api, dry_run=settings.dry_run, qps=c.kube_qps, burst=c.kube_burst)
    from gpubot.backends.kube.token_review import KubeTokenReviewer

    agent = node_agent(settings, c, kube=kube, issuer=KubeTokenReviewer(api))
    assert agent is not None  # c.agent is set
    from gpubot.backends.agent_client import HttpNodeAgent

    return ClusterPorts(
        name=c.name,
        kube=kube,
        agent=agent,
        metrics=prometheus_metrics(c),
        kernel_logs=agent if isinstance(agent, HttpNodeAgent) else None,
    )


def slurm_cluster(settings: Settings, c: ClusterSettings) -> ClusterPorts:
    """The Slurm commands on this host for the cluster's slurm.conf; GPUs through the node
    agents (a systemd unit on each node) at each node's NodeAddr."""
    from gpubot.backends.slurm import SlurmCommands, SlurmKubeApi
    from gpubot.backends.slurm.joblog import JobOutput

    if c.agent is None:
        raise ConfigError(
            f"clusters.{c.name}: a slurm cluster needs agent (e.g. agent: {{port: 9400}}) "
            "to read and reset its GPUs"
        )
    if c.agent.address != "internal_ip":
        raise ConfigError(
            f"clusters.{c.name}.agent.address: a slurm cluster has no agent pods; "
            "use internal_ip (each node's NodeAddr)"
        )
    s = c.slurm or ClusterSlurmSettings()
    if s.conf is not None and not s.conf.is_file():
        raise ConfigError(f"clusters.{c.name}.slurm.conf: {s.conf} is not a file")
    kube = SlurmKubeApi(
        SlurmCommands(conf=s.conf, bin_dir=s.bin_dir, timeout_seconds=s.timeout_seconds),
        drain_jobs=s.drain_jobs,
        reboot_next_state=s.reboot_next_state,
        job_output=JobOutput(roots=tuple(s.output_roots)),
        dry_run=settings.dry_run,
    )
    agent = node_agent(settings, c, kube=kube)
    assert agent is not None  # c.agent is set
    return ClusterPorts(name=c.name, kube=kube, agent=agent, metrics=prometheus_metrics(c))


def prometheus_metrics(c: ClusterSettings) -> Metrics:
    """PrometheusMetrics at the cluster's `prometheus_url`; without one, metric steps fail
    with one line saying what to set (the rest of the cluster still works)."""
    if c.prometheus_url is None:
        return _NoMetrics(c.name)
    if not c.prometheus_url.startswith(("http://", "https://")):
        raise ConfigError(
            f"clusters.{c.name}.prometheus_url: {c.prometheus_url!r} is not an http(s) URL"
        )
    if c.prometheus_token_file is not None and not c.prometheus_token_file.is_file():
        raise ConfigError(
            f"clusters.{c.name}.prometheus_token_file: {c.prometheus_token_file} is not a file"
        )
    from gpubot.backends.prometheus import PrometheusMetrics

    return PrometheusMetrics(
        url=c.prometheus_url,
        timeout_seconds=c.prometheus_timeout_seconds,
        retries=c.prometheus_retries,
        token_file=c.prometheus_token_file,
    )


class _NoMetrics:
    """A kubernetes cluster without `prometheus_url`: a metrics step fails with this line."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    async def query(self, *, promql: str) -> list[Sample]:
        raise PermanentStepError(
            f"clusters.{self.cluster}: no prometheus_url is set, so Prometheus cannot be queried"
        )


def node_agent(
    settings: Settings,
    cluster: ClusterSettings,
    *,
    kube: KubeApi,
    issuer: TokenIssuer | None = None,
) -> NodeAgent | None:
    """The HTTP node agent when the cluster has an `agent` section, else None.

    Agents are found at the addresses `kube` reports for each node, and called with a token
    of the bot's ServiceAccount (identity: serviceaccount; per node from `issuer`, the
    TokenRequest API, or the projected one) or with tokens derived per node from the master
    secret (hmac: GPUBOT_AGENT_TOKEN or agent.token_file).
    """
    a = cluster.agent
    if a is None:
        return None
    if a.ca_file is not None and not a.ca_file.is_file():
        raise ConfigError(f"clusters.{cluster.name}.agent.ca_file: {a.ca_file} is not a file")
    sa, per_node = a.identity == "serviceaccount", a.bot_audience == "per_node"
    node_tokens = None
    if sa and per_node:
        from gpubot.backends.bot_tokens import PerNodeBotTokens

        if issuer is None:
            raise ConfigError(f"clusters.{cluster.name}: per-node agent tokens need kubernetes")
        pod = (settings.pod_name, settings.pod_uid)
        node_tokens = PerNodeBotTokens(
            issuer,
            namespace=a.namespace,
            service_account=a.bot_service_account,
            audience=a.audience,
            seconds=a.bot_token_seconds,
            pod=(pod[0], pod[1]) if pod[0] and pod[1] else None,
        )
    if sa and not per_node and not a.identity_token_file.is_file():
        raise ConfigError(
            f"clusters.{cluster.name}.agent.identity_token_file: {a.identity_token_file} is "
            "not a file (the bot's projected ServiceAccount token; the chart mounts it)"
        )
    from gpubot.backends.agent_address import AgentAddresses, AgentLocation
    from gpubot.backends.agent_client import HttpNodeAgent

    location = AgentLocation(
        cluster=cluster.name,
        address=a.address,
        port=a.port,
        scheme=a.scheme,
        namespace=a.namespace,
        selector=a.selector,
        cache_seconds=a.cache_seconds,
    )
    return HttpNodeAgent(
        addresses=AgentAddresses(kube, location),
        master=settings.agent_token_value() if a.identity == "hmac" else None,
        token_file=a.identity_token_file if sa and not per_node else None,
        node_tokens=node_tokens,
        ca_file=a.ca_file,
    )


def agent_event_auth(settings: Settings) -> AgentEventAuth:
    """Who may post to /agent/events, per cluster: the agent pods of a cluster whose agents
    use ServiceAccount tokens (reviewed by that cluster's API server), or, for the other
    clusters, a node's token derived from the master secret."""
    from gpubot.web.agent_identity import AgentEventAuth, ServiceAccountAgents

    service_accounts = []
    for c in settings.clusters:
        a = c.agent
        if a is None or a.identity != "serviceaccount":
            continue
        from gpubot.backends.kube import api_client_for
        from gpubot.backends.kube.token_review import KubeTokenReviewer

        api = api_client_for(
            cluster=c.name, context=c.context, kubeconfig=c.kubeconfig, in_cluster=c.in_cluster
        )
        reviewer = KubeTokenReviewer(api)
        service_accounts.append(
            ServiceAccountAgents(
                cluster=c.name,
                reviewer=reviewer,
                pods=reviewer,
                audience=a.audience,
                namespace=a.namespace,
                service_account=a.service_account,
                cache_seconds=a.review_cache_seconds,
            )
        )
    hmac_clusters = [
        c.name for c in settings.clusters if c.agent is None or c.agent.identity == "hmac"
    ]
    return AgentEventAuth(
        master=settings.agent_token_value() if hmac_clusters else None,
        hmac_clusters=frozenset(hmac_clusters),
        service_accounts=service_accounts,
    )


@dataclass
class App:
    settings: Settings
    service: GpubotService
    store: Store
    notifier: ChatNotifier
    clusters: Mapping[str, ClusterPorts]
    runbooks: list[LoadedRunbook] = field(default_factory=list)
    slack: SlackParts | None = None  # the Slack app, when slack.mode is on and a token is set
    lease: Any = None  # LeaseLeadership when leader_election.enabled: serve starts and stops it
    reports: IdleReporter | None = None
    scheduler: ReportScheduler | None = None  # started by serve only
    metrics: WebMetrics = field(default_factory=WebMetrics)  # what /metrics serves

    def companions(self) -> list[Any]:
        """What `serve` starts before it answers and stops after: the Lease, Socket Mode,
        the report scheduler (after the Lease, so it knows whether it leads)."""
        return [c for c in (self.lease, self.slack, self.scheduler) if c is not None]

    async def aclose(self, *, flush_seconds: float = 10.0) -> None:
        """Wait for the service's work, post the node Events and send what is still queued
        for Slack (each for at most `flush_seconds`: serve gives what is left of its
        shutdown grace), close the store."""
        await self.service.wait_idle(events_timeout_s=flush_seconds / 2)
        if self.slack is not None:
            await self.slack.aclose(grace=flush_seconds)
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
    leadership: Leadership | None = None,
) -> App:
    registry = registry or builtin_registry(
        reclaim=build_reclaim(settings),
        diag_level=settings.policy.diag_level,
        diag_unavailable=settings.policy.diag_unavailable,
    )
    policy = build_policy(settings)
    loaded = load_runbooks(settings, registry=registry, policy=policy)
    key = _audit_key(settings)
    signers = build_signers(settings)
    clusters = clusters or build_clusters(settings)  # refuse a bad config before writing
    store = store or open_store(settings.store.url, audit_key=key)
    slack_on = settings.slack.mode != "off" and settings.slack_bot_token is not None
    if notifier is None and slack_on:
        from gpubot.slack.app import make_notifier, web_client
        from gpubot.slack.notifier import NotifierStore

        notifier = make_notifier(settings, web_client(settings), cast(NotifierStore, store))
    notifier = notifier or ConsoleNotifier(out or sys.stdout)
    # `leadership` given (the CLI's NeverLeader): no Lease of its own to start or hold.
    lease = build_leadership(settings) if leadership is None else None
    metrics = WebMetrics()
    metrics.runbooks([item.runbook.name for item in loaded])
    slurm = frozenset(c.name for c in settings.clusters if c.backend == "slurm")
    engine = Engine(
        tally=metrics,  # step outcomes and durations, approvals, run ends, dependency errors
        leadership=leadership or lease or AlwaysLeader(),
        store=store,
        registry=registry,
        runbooks={item.runbook.name: item.runbook for item in loaded},
        # Each failed call to a cluster's API, agents or Prometheus is counted.
        clusters=counted_clusters(clusters, metrics, slurm=slurm),
        notifier=notifier,
        clock=clock or SystemClock(),
        policy=policy,
        default_cluster=settings.default_cluster,
        signers=signers,
        evidence_keep_days=settings.evidence.keep_days,
        **shared_caps(settings, store, lease),
    )
    service = GpubotService(engine, dry_run=settings.dry_run)
    _hand_over_when_idle(lease, service)
    reporter, scheduler = build_reports(settings, engine=engine, notifier=notifier)
    slack = None
    if slack_on:
        from gpubot.slack.app import make_slack_app
        from gpubot.slack.notifier import SlackNotifier
        from gpubot.slack.verify import SeenRequests

        if isinstance(notifier, SlackNotifier):  # not when a test passes its own notifier
            slack = make_slack_app(
                settings,
                service=service,
                notifier=notifier,
                usergroups={name: g.usergroups for name, g in policy.groups.items()},
                idle=reporter.summary,
                seen=cast(SeenRequests, store),  # replay record shared by replicas
                on_foreign=metrics.slack_refused,
            )
    metrics.watch(watched(engine))
    return App(
        settings=settings,
        service=service,
        store=store,
        notifier=notifier,
        clusters=clusters,
        runbooks=loaded,
        slack=slack,
        lease=lease,
        reports=reporter,
        scheduler=scheduler,
        metrics=metrics,
    )


def _hand_over_when_idle(lease: Any, service: GpubotService) -> None:
    """A sharded replica gives a shard back when no step of it runs here (ShardedLeadership)."""
    from gpubot.backends.kube.shards import ShardedLeadership
    from gpubot.domain.runbooks.shards import shard_of

    if isinstance(lease, ShardedLeadership):
        count = len(lease.shards)
        lease.busy = lambda shard: any(
            shard_of(key, count) == shard for key in service.executor.acting_on()
        )


def shared_caps(settings: Settings, store: Store, lease: Any) -> dict[str, Any]:
    """With shards, the replicas execute side by side: the blast-radius caps are counted in
    the store they share, each replica under its Lease identity."""
    from gpubot.backends.kube.shards import ShardedLeadership

    if not isinstance(lease, ShardedLeadership):
        return {}
    from gpubot.backends.store import SqlStore
    from gpubot.backends.store.shared_caps import SqlSharedCaps

    if not isinstance(store, SqlStore):
        raise ConfigError("leader_election.shards needs the PostgreSQL store the replicas share")
    return {"shared_caps": SqlSharedCaps(store), "identity": lease.identity}


def watched(engine: Engine) -> Watched:
    """What /metrics reads at each scrape: the store's counts (aggregate queries), whether
    this replica leads, and the Slack outbox when messages go to Slack."""
    from gpubot.backends.store import SqlStore
    from gpubot.backends.store.stats import SqlStats

    store = engine.store
    lease_of: Any = engine.leadership
    held = getattr(lease_of, "held", None)  # ShardedLeadership
    parts = Watched(
        store=SqlStats(store) if isinstance(store, SqlStore) else None,
        is_leader=engine.leadership.is_leader,
        shards=(lambda: (len(held()), len(lease_of.shards))) if callable(held) else None,
        now=engine.clock.now,
    )
    if not hasattr(engine.notifier, "outbox"):  # the console notifier: no Slack to count
        return parts
    from gpubot.slack.notifier import SlackNotifier

    if isinstance(engine.notifier, SlackNotifier):
        outbox = engine.notifier.outbox

        def reading() -> OutboxReading:
            s = outbox.stats
            errors = {
                "rate_limited": s.rate_limited,
                "server_error": s.server_errors,
                "client_error": s.client_errors,
            }
            return OutboxReading(pending=outbox.pending, errors=errors)

        parts.outbox = reading
    return parts


def build_reports(
    settings: Settings, *, engine: Engine, notifier: ChatNotifier
) -> tuple[IdleReporter, ReportScheduler]:
    """The idle reporter (for `/gpu idle` and the CLI) and the scheduler that posts it."""
    from gpubot.backends.store.database import create_store_engine

    s = settings.reports.idle
    reporter = IdleReporter(s, clusters=engine.clusters, audit=engine.store, clock=engine.clock)
    poster = cast(ReportPoster, notifier)
    job = IdleReportJob(reporter, poster, channel=s.channel or settings.slack.channel)
    scheduler = ReportScheduler(
        s,
        job=job,
        engine=lambda: create_store_engine(settings.store.url),
        leadership=engine.leadership,
    )
    return reporter, scheduler


def build_leadership(settings: Settings) -> Any:
    """A Lease on the configured cluster when leader election is on; None when alone."""
    le = settings.leader_election
    if not le.enabled:
        return None
    kube = [c for c in settings.clusters if c.backend == "kubernetes"]
    chosen = (
        next((c for c in kube if c.name == le.cluster), None)
        if le.cluster
        else (kube[0] if kube else None)
    )
    if chosen is None:
        raise ConfigError(
            "leader_election.enabled needs a kubernetes cluster to hold the Lease "
            f"(leader_election.cluster: {le.cluster or 'unset'})"
        )
    if le.shards > 1 and not settings.store.url.startswith("postgresql"):
        raise ConfigError(
            f"leader_election.shards: {le.shards} needs a PostgreSQL store, which the "
            "replicas share (store.url is not postgresql)"
        )
    import socket

    from gpubot.backends.kube import api_client_for
    from gpubot.backends.kube.lease import LeaseLeadership
    from gpubot.backends.kube.shards import ShardedLeadership, ShardLeases

    api = api_client_for(
        cluster=chosen.name,
        context=chosen.context,
        kubeconfig=chosen.kubeconfig,
        in_cluster=chosen.in_cluster,
    )
    lease: dict[str, Any] = {
        "identity": le.identity or socket.gethostname(),
        "namespace": le.namespace,
        "name": le.lease_name,
        "lease_seconds": le.lease_seconds,
        "renew_seconds": le.renew_seconds,
    }
    if le.shards == 1:
        # Never beside sharded replicas (a rolling update that turns shards off): the
        # leader's Lease is taken only once no shard Lease is fresh.
        shards = ShardLeases(api, namespace=le.namespace, group=le.lease_name)
        return LeaseLeadership(api, may_take=lambda: not shards.held(), **lease)
    return ShardedLeadership(api, shards=le.shards, **lease)


def open_existing_store(settings: Settings) -> SqlStore:
    """The configured database for the commands that read it (audit, gpus): never created
    (StoreMissingError, one line), since reporting on an empty new database says nothing
    true."""
    return open_store(settings.store.url, audit_key=_audit_key(settings), create=False)


def build_agent_driver(
    settings: Settings, *, driver: str, node: str
) -> tuple[AgentDriver, Diagnostics, Evidence | None]:
    """The node agent's GPU driver, diagnostics and evidence: NVML, DCGM and the node's
    tools on a GPU node (None: the tools on PATH), or the simulated cluster's node
    (`--driver simulated`)."""
    if driver == "simulated":
        from gpubot.agent.simulated import SimulatedDriver

        cluster = settings.cluster(settings.agent.cluster)
        sim = SimulatedCluster.default(
            name=settings.agent.cluster, state_path=cluster.state_file if cluster else None
        )
        if node not in sim.node_names():
            raise InputError(f"--node: the simulated cluster has no node {node!r} (gpu-node-01…)")
        simulated = SimulatedDriver(
            sim.agent, node=node, reset_seconds=settings.agent.simulated_reset_seconds
        )
        return simulated, simulated, simulated
    from gpubot.agent.dcgm import DcgmDiagnostics
    from gpubot.agent.nvml import NvmlDriver

    dcgmi = str(settings.agent.dcgmi_path) if settings.agent.dcgmi_path else None
    diagnostics = DcgmDiagnostics(
        path=dcgmi, timeout_s=settings.agent.diag_timeout_seconds, host=settings.agent.dcgm_host
    )
    return NvmlDriver(), diagnostics, None


def build_breakglass_app(settings: Settings, **overrides: Any) -> App:
    """The service over the configured store for the break-glass CLI: a process that never
    leads (never starts a step) and tells no chat (Slack is what is down; the store and the
    audit trail are the record)."""
    import io

    from gpubot.engine.leader import NeverLeader

    quiet = ConsoleNotifier(io.StringIO())
    return build_app(settings, leadership=NeverLeader(), notifier=quiet, **overrides)


def build_signers(settings: Settings) -> VoteSigners:
    """The operator keys the server counts signed break-glass votes with: from the config
    file only (config.py refuses them from the environment), read fully here, so a key
    cryptography cannot use stops the start with one line."""
    from gpubot.backends.sshsig import OperatorKey, SshSigners

    keys = settings.policy.operator_keys
    try:
        return SshSigners(
            OperatorKey(public_key=k.key, user=k.user, usergroups=tuple(k.usergroups)) for k in keys
        )
    except ValueError as exc:
        raise ConfigError(f"policy.operator_keys: {exc}") from None


def _audit_key(settings: Settings) -> bytes | None:
    """The key that seals the audit chain's head, when the config sets one."""
    return settings.audit_key.get_secret_value().encode() if settings.audit_key else None

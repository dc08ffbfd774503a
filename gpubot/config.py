"""Settings from a YAML file and the environment (GPUBOT_ prefix); the only reader of os.environ."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from gpubot.domain.dcgm_diag import DiagUnavailable
from gpubot.domain.durations import parse_duration
from gpubot.domain.incidents import unlabelled_cluster
from gpubot.domain.pools import PoolMode, parse_window
from gpubot.domain.problems import first_problem
from gpubot.domain.reclaim import SYSTEM_NAMESPACES, parse_owner
from gpubot.domain.signed_votes import fingerprint, key_blob
from gpubot.errors import ConfigError

_AUDIENCE = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}$"
_CRON_FIELD = re.compile(r"[0-9A-Za-z*/,?-]{1,64}", re.ASCII)
_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
    re.ASCII,
)
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", re.ASCII)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SlackRoute(_Section):
    cluster: str | None = Field(None, description="cluster name; unset matches any")
    severity: str | None = Field(None, description="alert severity label; unset matches any")
    channel: str = Field(description="channel name or id for matching incidents")


class SlackSettings(_Section):
    mode: Literal["socket", "http", "off"] = Field(
        "socket", description="socket (no ingress), http, or off"
    )
    channel: str = Field("#gpu-incidents", description="default channel for incident threads")
    api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL")
    routes: list[SlackRoute] = Field(
        default_factory=list,
        description="incident channel by cluster and severity; first match wins, else `channel`",
    )
    rate_per_second: float = Field(
        1.0, gt=0, description="outbound messages per second per channel (Slack allows ~1)"
    )
    usergroup_cache_seconds: float = Field(
        300.0, ge=0, description="how long user-group members from Slack are cached"
    )
    team_id: str | None = Field(
        None,
        pattern=r"^T[A-Z0-9]{2,31}$",
        description=(
            "the workspace's id (T…): a request from any other workspace is refused; "
            "required for slack.mode http"
        ),
    )
    enterprise_id: str | None = Field(
        None,
        pattern=r"^E[A-Z0-9]{2,31}$",
        description=(
            "the Enterprise Grid org's id (E…), when the workspace is in one; unset, a "
            "request that names an org is refused"
        ),
    )
    app_id: str | None = Field(
        None,
        pattern=r"^A[A-Z0-9]{2,31}$",
        description=(
            "the Slack app's id (A…): a request for any other app is refused; required for "
            "slack.mode http"
        ),
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_boolean(cls, value: Any) -> Any:
        """YAML reads an unquoted `off` (or `no`, `false`) as false: that means "off". Its
        `on`/`yes`/`true` names no mode, so it is refused with the modes there are."""
        if value is False:
            return "off"
        if value is True:
            raise ValueError(
                "YAML reads on/yes/true as a boolean, which names no mode: "
                "write socket or http (or off)"
            )
        return value


class StoreSettings(_Section):
    url: str = Field("sqlite:///gpubot.db", description="SQLAlchemy URL: SQLite file or PostgreSQL")


class EvidenceSettings(_Section):
    """Evidence bundles gathered before a reset, reboot or hand-off (node.gather_evidence)."""

    keep_days: int = Field(
        90,
        ge=0,
        le=3650,
        description="bundles older than this many days are deleted by the leader, at most "
        "hourly, each deletion recorded as an evidence.pruned audit event; 0 keeps them",
    )


class RunbookSettings(_Section):
    dirs: list[Path] = Field(default_factory=list, description="extra runbook directories")
    builtin: bool = Field(True, description="load the runbooks shipped with gpubot")


class ClusterAgentSettings(_Section):
    """Where a node's agent is: an address the cluster reports for that node, plus a port."""

    address: Literal["internal_ip", "agent_pod"] = Field(
        "internal_ip",
        description="internal_ip: the Node's InternalIP (agent on a hostPort); agent_pod: the "
        "IP of the agent pod scheduled on that node (namespace + selector)",
    )
    port: int = Field(9400, ge=1, le=65535, description="the agent's port at that address")
    scheme: Literal["http", "https"] = "http"
    ca_file: Path | None = Field(None, description="CA bundle for https agents")
    namespace: str = Field(
        "gpubot", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description="agent pods' namespace"
    )
    selector: str = Field(
        "app.kubernetes.io/component=agent",
        pattern=r"^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)*$",
        description="label selector of the agent pods (key=value[,key=value])",
    )
    cache_seconds: float = Field(
        30.0, ge=0, description="how long node addresses read from the cluster are reused"
    )
    identity: Literal["hmac", "serviceaccount"] = Field(
        "hmac",
        description="how bot and agents know each other. serviceaccount (Kubernetes): each "
        "side sends its projected ServiceAccount token and the other checks it with the "
        "TokenReview API; an agent's node is the node its pod is bound to. hmac (hosts "
        "without Kubernetes, e.g. Slurm nodes, and the simulated cluster): per-node tokens "
        "derived from the master secret GPUBOT_AGENT_TOKEN",
    )
    audience: str = Field(
        "gpubot",
        pattern=_AUDIENCE,
        description="serviceaccount: the audience of the bot's and the agents' projected tokens",
    )
    bot_audience: Literal["per_node", "shared"] = Field(
        "per_node",
        description="serviceaccount: the token the bot sends an agent. per_node: one the bot "
        "requests for itself (TokenRequest API) for the audience `<audience>:<node>`, so a "
        "token an agent receives opens that node's agent only; shared: the bot's projected "
        "token for `audience` (identity_token_file), which every agent receives",
    )
    bot_service_account: str = Field(
        "gpubot",
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="serviceaccount, per_node: the bot's own ServiceAccount, in `namespace`, "
        "that it requests the agents' tokens for (create serviceaccounts/token)",
    )
    bot_token_seconds: int = Field(
        600, ge=600, le=86400, description="serviceaccount, per_node: each token's lifetime"
    )
    identity_token_file: Path = Field(
        Path("/var/run/secrets/gpubot/token"),
        description="serviceaccount, shared: the bot's projected token for `audience`, "
        "sent to the agents; re-read on each call (the kubelet rotates it)",
    )
    service_account: str = Field(
        "gpubot-agent",
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="serviceaccount: the agents' ServiceAccount, in `namespace`; a token of "
        "any other account is not an agent's",
    )
    review_cache_seconds: float = Field(
        10.0, ge=0, le=300, description="serviceaccount: how long a token's review is reused"
    )


class ClusterSlurmSettings(_Section):
    """How the bot reaches a Slurm cluster: the Slurm commands on the bot's host (a submit
    host with the cluster's munge key), as an operator with Slurm admin rights."""

    conf: Path | None = Field(
        None, description="slurm.conf the commands read (SLURM_CONF); default the host's"
    )
    bin_dir: Path | None = Field(
        None, description="folder with scontrol, sinfo, squeue, sacct, scancel; default PATH"
    )
    timeout_seconds: float = Field(30.0, gt=0, le=600, description="per Slurm command")
    drain_jobs: Literal["requeue", "cancel", "requeue_or_cancel"] = Field(
        "requeue",
        description="what node.drain does to each job on the node: requeue it (scontrol "
        "requeue; a job that cannot be requeued fails the step, naming it), cancel it (scancel), "
        "or requeue where it can and cancel the rest",
    )
    reboot_next_state: Literal["down", "resume"] = Field(
        "down",
        description="node.request_reboot runs `scontrol reboot ASAP nextstate=…`: down keeps "
        "the rebooted node out until release-node verifies and resumes it; resume puts it "
        "straight back",
    )
    output_roots: list[Path] = Field(
        default_factory=list,
        description="folders (shared file systems) where OOM triage may read a job's --output "
        "file; a file elsewhere is not read (its path is the job owner's choice)",
    )


class ClusterSettings(_Section):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    backend: Literal["simulated", "kubernetes", "slurm"] = "simulated"
    context: str | None = Field(None, description="kubeconfig context (kubernetes backend)")
    kubeconfig: Path | None = Field(
        None, description="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)"
    )
    in_cluster: bool = Field(False, description="use the pod's service account, not a kubeconfig")
    kube_qps: float = Field(
        300.0,
        gt=0,
        description="requests per second to the API server, steady (kubernetes backend); an "
        "XID alert's plan and cordon take 6, an eviction 1",
    )
    kube_burst: int = Field(
        300, ge=1, description="requests sent back to back before kube_qps paces them"
    )
    state_file: Path | None = Field(None, description="simulated cluster: persist its state here")
    prometheus_url: str | None = Field(
        None, description="Prometheus base URL with the DCGM exporter's series (kubernetes backend)"
    )
    prometheus_timeout_seconds: float = Field(
        10.0, gt=0, description="per query; Prometheus also stops evaluating it then"
    )
    prometheus_retries: int = Field(
        2, ge=0, le=10, description="quick retries on connection errors and HTTP 502/503/504"
    )
    prometheus_token_file: Path | None = Field(
        None, description="file with a bearer token for Prometheus, re-read on each query"
    )
    agent: ClusterAgentSettings | None = Field(
        None,
        description="how the bot reaches the node agents: at an address the cluster reports",
    )
    slurm: ClusterSlurmSettings | None = Field(
        None, description="slurm backend: where the Slurm commands are and what a drain does"
    )

    @model_validator(mode="after")
    def _serviceaccount_needs_kubernetes(self) -> ClusterSettings:
        a = self.agent
        if a is not None and a.identity == "serviceaccount" and self.backend != "kubernetes":
            raise ValueError(
                "agent.identity: serviceaccount needs backend: kubernetes (its API server "
                "reviews the tokens); use identity: hmac here"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_agent_url(cls, data: Any) -> Any:
        if isinstance(data, dict) and "agent_url" in data:
            raise ValueError(
                "agent_url is no longer read: the bot finds each node's agent from the cluster; "
                "set agent: {port: 9400, address: internal_ip} (or address: agent_pod, with "
                "namespace and selector) instead"
            )
        return data


class GroupSettings(_Section):
    users: list[str] = Field(default_factory=list, description="Slack user ids (U…/W…)")
    usergroups: list[str] = Field(default_factory=list, description="Slack user-group ids (S…)")


class PoolSettings(_Section):
    """A node pool: its nodes (clusters and Node labels) and the mode automation runs in."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    mode: PoolMode = Field(
        "remediate",
        description="observe (plan, tell, record; change nothing), quarantine (the automatic "
        "steps only; nothing needing an approval is offered) or remediate (the whole runbook)",
    )
    clusters: list[str] = Field(default_factory=list, description="empty: every cluster")
    window: str | None = Field(
        None,
        description="maintenance window, UTC: '[days ]HH:MM-HH:MM' (`sat,sun 02:00-06:00`, "
        "`22:00-04:00`); outside it, steps that need an approval wait, even once approved",
    )
    approvers: dict[Literal["required", "two-person"], str] = Field(
        default_factory=dict,
        description="approval level → the approver group asked for this pool's nodes "
        "(a group of policy.groups); a level not named keeps the runbook's group",
    )
    match: dict[str, str] = Field(
        default_factory=dict,
        description="Node labels the node must carry with exactly these values (all of them); "
        "empty: every node of the clusters",
    )

    @field_validator("window")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is not None:
            parse_window(value)
        return value

    @field_validator("match")
    @classmethod
    def _label_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key, wanted in value.items():
            if not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(wanted):
                raise ValueError(f"{key!r}: {wanted!r} is not a Kubernetes label key and value")
        return value


class BlastRadiusSettings(_Section):
    max_cordoned_fraction: float = Field(0.25, ge=0, le=1)
    max_cordoned_count: int = Field(4, ge=0)
    max_concurrent_drains: int = Field(1, ge=0)


class AttemptSettings(_Section):
    max_attempts: int = Field(3, ge=1)
    window: timedelta = timedelta(hours=24)

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value


class OperatorKeySettings(_Section):
    """One operator's SSH public key and who it stands for in a signed break-glass vote."""

    key: str = Field(
        description="the OpenSSH public key line (`ssh-ed25519 AAAA… comment`, as in the "
        "operator's id_ed25519.pub); ed25519, ecdsa or rsa (2048 bits or more)"
    )
    user: str = Field(
        pattern=r"^[UW][A-Z0-9]{1,20}$",
        description="the approver identity: a Slack user id in policy.groups",
    )
    usergroups: list[str] = Field(
        default_factory=list,
        description="Slack user-group ids this person is in (Slack is not asked for votes "
        "that come from the CLI)",
    )

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        key_blob(value)  # ValueError with one line: the adapter reads it fully at start
        return value

    def fingerprint(self) -> str:
        return fingerprint(key_blob(self.key)[1])


class EscalationSettings(_Section):
    """When a GPU's history changes what an XID run does (gpubot.domain.gpu_escalation)."""

    xid_repeat_window: timedelta = Field(
        timedelta(days=7),
        description="an XID in repeat_xids seen again on the same GPU within this: run "
        "diagnostics (NVIDIA's catalog); the first one: check the application",
    )
    repeat_xids: list[int] = Field(
        default_factory=lambda: [13, 31], description="XIDs whose repeat calls for diagnostics"
    )
    max_resets: int = Field(
        1, ge=0, description="resets of one GPU within reset_window before a reboot is asked"
    )
    reset_window: timedelta = Field(timedelta(days=7), description="resets are counted over this")
    max_reboots: int = Field(
        2,
        ge=1,
        description="reboots for the same XID within reboot_window before the GPU is marked "
        "for hardware service (gpud's practice: inspection after two)",
    )
    reboot_window: timedelta = Field(timedelta(days=30), description="reboots counted over this")

    @field_validator("xid_repeat_window", "reset_window", "reboot_window", mode="before")
    @classmethod
    def _windows(cls, value: Any) -> Any:
        return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value


def _default_groups() -> dict[str, GroupSettings]:
    # The shipped runbooks name `oncall`; empty until configured, so nobody can approve yet.
    return {"oncall": GroupSettings()}


class PolicySettings(_Section):
    default_group: str = "oncall"
    groups: dict[str, GroupSettings] = Field(default_factory=_default_groups)
    approval_expiry: timedelta = timedelta(minutes=30)
    blast_radius: BlastRadiusSettings = Field(default_factory=BlastRadiusSettings)
    attempts: AttemptSettings = Field(default_factory=AttemptSettings)
    diag_level: int = Field(
        1,
        ge=0,
        le=3,
        description="DCGM diagnostics level gpu.diag runs before a node is released (the "
        "xid79 runbook's verify): 1 quick (seconds), 2 medium (minutes), 3 long (~15 min); "
        "0 turns diagnostics off, and a node is then released on NVML's word alone",
    )
    mode: PoolMode = Field(
        "remediate",
        description="the mode of nodes no pool selects (the default pool): observe, "
        "quarantine or remediate",
    )
    pools: list[PoolSettings] = Field(
        default_factory=list,
        description="node pools, first match wins; a node in none follows `mode` and the "
        "rest of this block",
    )
    diag_unavailable: DiagUnavailable = Field(
        "approve",
        description="when DCGM cannot run on a node (no dcgmi in the agent, no host engine): "
        "approve releases it only through an approval that names the missing check; stop "
        "leaves it cordoned for a human. Either way the plan says so before anything runs",
    )
    escalation: EscalationSettings = Field(default_factory=EscalationSettings)
    operator_keys: list[OperatorKeySettings] = Field(
        default_factory=list,
        description="break-glass CLI: each operator's SSH public key → the approver it stands "
        "for; votes are signed with it and checked by the server. Read from the config file "
        "only, never from GPUBOT_* variables",
    )

    @model_validator(mode="after")
    def _pool_groups(self) -> PolicySettings:
        for pool in self.pools:
            for level, group in pool.approvers.items():
                if group not in self.groups:
                    raise ValueError(
                        f"pools.{pool.name}.approvers.{level}: {group!r} is not a group of "
                        f"policy.groups ({', '.join(sorted(self.groups)) or 'none'})"
                    )
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("pools: a pool name is used twice")
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_operators(cls, data: Any) -> Any:
        if isinstance(data, dict) and "operators" in data:
            raise ValueError(
                "operators (local account → approver) is no longer read: break-glass "
                "decisions are signed with the operator's SSH key; list the keys under "
                "policy.operator_keys ({key: ssh-ed25519 AAAA…, user: U…}; README: Break-glass)"
            )
        return data

    @field_validator("operator_keys")
    @classmethod
    def _one_identity_per_key(cls, value: list[OperatorKeySettings]) -> list[OperatorKeySettings]:
        seen: dict[str, str] = {}
        for entry in value:
            key = entry.fingerprint()
            if key in seen:
                raise ValueError(f"key {key} is listed twice (for {seen[key]} and {entry.user})")
            seen[key] = entry.user
        return value

    @field_validator("approval_expiry", mode="before")
    @classmethod
    def _expiry(cls, value: Any) -> Any:
        return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value


class LeaderElectionSettings(_Section):
    """HA: replicas share the store; the one holding a Kubernetes Lease executes steps."""

    enabled: bool = Field(False, description="elect a leader on a coordination.k8s.io Lease")
    cluster: str | None = Field(
        None,
        description="cluster whose API holds the Lease (default: the first kubernetes cluster)",
    )
    namespace: str = "gpubot"
    lease_name: str = "gpubot-leader"
    identity: str | None = Field(None, description="this replica's name (default: host name)")
    lease_seconds: float = Field(15.0, gt=1)
    renew_seconds: float = Field(5.0, gt=0)


def _duration(value: Any) -> Any:
    return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value


class IdleReportSettings(_Section):
    """The scheduled idle-GPU report: which GPUs count as idle, what they cost, when to post."""

    enabled: bool = Field(True, description="post the report on `cron` (the leader only)")
    cron: str = Field("0 9 * * mon-fri", description="crontab: minute hour day month weekday")
    timezone: str = Field("UTC", description="IANA time zone the cron is read in")
    channel: str | None = Field(None, description="where to post (default: slack.channel)")
    cluster: str | None = Field(None, description="cluster to report on (default: every cluster)")
    window: timedelta = Field(timedelta(hours=1), description="utilisation averaged over this")
    threshold_pct: float = Field(5.0, ge=0, le=100, description="idle below this average %")
    lookback: timedelta = Field(
        timedelta(hours=24), description="hours idle are counted over this span"
    )
    step: timedelta = Field(timedelta(minutes=5), description="resolution of the idle count")
    top: int = Field(10, ge=1, le=100, description="idle allocations listed in the report")
    prices: dict[str, float] = Field(
        default_factory=lambda: {"H100": 12.0, "H200": 14.0, "A100": 10.0, "L40S": 4.0},
        description="$ per GPU-hour by model; a key matches a model name containing it",
    )
    default_price: float = Field(0.0, ge=0, description="$ per GPU-hour for unlisted models")
    teams: dict[str, str] = Field(default_factory=dict, description="namespace → team name")
    retry_every: timedelta = Field(timedelta(minutes=5), description="retry when Prometheus fails")
    retries: int = Field(6, ge=0, description="retries of one report before giving up")

    _durations = field_validator("window", "lookback", "step", "retry_every", mode="before")(
        _duration
    )

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        """Its shape here (five fields of crontab characters); the scheduler, which owns the
        cron library, reads the values when it is built and names a value out of range."""
        fields = value.split()
        if len(fields) != 5 or not all(_CRON_FIELD.fullmatch(f) for f in fields):
            raise ValueError(
                f"invalid crontab {value!r}: five fields (minute hour day month weekday) of "
                "digits, names, '*', ',', '-' and '/'"
            )
        return value


class ReportSettings(_Section):
    idle: IdleReportSettings = Field(default_factory=IdleReportSettings)


class ReclaimSettings(_Section):
    """Idle-GPU reclamation (runbook idle-reclaim): who is never touched, who is told, how long."""

    opt_out_key: str = Field(
        "gpubot.io/reclaim",
        pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        description='pod label or annotation key; the value "false" keeps the pod out',
    )
    system_namespaces: list[str] = Field(
        default_factory=lambda: sorted(SYSTEM_NAMESPACES),
        description="namespaces whose pods are never reclaimed (replaces the default list)",
    )
    min_age: timedelta = Field(
        timedelta(hours=2), description="pods younger than this are never reclaimed"
    )
    grace: timedelta = Field(
        timedelta(hours=4), description="how long the owner may object before approval is asked"
    )
    owners: dict[str, str] = Field(
        default_factory=dict,
        description='namespace → Slack mention ("<@U…>" or "<!subteam^S…>"); the pod '
        "annotation gpubot.io/owner wins",
    )
    fallback: str = Field(
        "", description="who is told when nobody owns the namespace (a mention, or plain text)"
    )
    poll: timedelta = Field(
        timedelta(seconds=30), description="how often the grace period looks for an objection"
    )

    _durations = field_validator("min_age", "grace", "poll", mode="before")(_duration)

    @field_validator("owners")
    @classmethod
    def _mentions(cls, value: dict[str, str]) -> dict[str, str]:
        for namespace, mention in value.items():
            if parse_owner(mention, source="namespace") is None:
                raise ValueError(
                    f"owner of {namespace!r} must be <@U…> or <!subteam^S…>, not {mention!r}"
                )
        return value

    @field_validator("grace")
    @classmethod
    def _grace(cls, value: timedelta) -> timedelta:
        if not timedelta(0) <= value <= timedelta(hours=24):
            raise ValueError("grace must be between 0 and 24h")
        return value


class WebSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    max_body_bytes: int = Field(
        1024 * 1024, ge=1024, description="larger request bodies get 413, on every endpoint"
    )
    body_timeout_seconds: float = Field(
        10.0, gt=0, le=300, description="a request body not received in this time gets 408"
    )
    header_timeout_seconds: float = Field(
        5.0,
        gt=0,
        le=300,
        description="a connection idle this long, or whose request headers take longer, is closed",
    )
    max_connections: int = Field(
        512,
        ge=16,
        le=65536,
        description=(
            "open HTTP connections at most (and never more than the open-file limit less 128): "
            "past it a new connection sheds the oldest one whose request has not authenticated"
        ),
    )
    shutdown_grace_seconds: float = Field(
        20.0,
        gt=0,
        le=3600,
        description=(
            "on SIGTERM, stop within this time: running steps are interrupted (left for the "
            "next leader) and the Lease released; keep it under the pod's "
            "terminationGracePeriodSeconds (30 s by default)"
        ),
    )


class LogSettings(_Section):
    """What `gpubot serve` and `gpubot agent` write to stderr (`--log-format`, `--log-level`
    override these)."""

    format: Literal["auto", "json", "text"] = Field(
        "auto", description="json, text, or auto: text on a terminal, JSON otherwise"
    )
    level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="gpubot's own records at this level and above"
    )
    access_log: bool = Field(
        False,
        description="serve only: one line per HTTP request (uvicorn's access log, same format)",
    )


class AgentSettings(_Section):
    """The node agent (`gpubot agent`), one per GPU node."""

    identity: Literal["hmac", "serviceaccount"] = Field(
        "hmac",
        description="serviceaccount (Kubernetes): the agent sends its projected "
        "ServiceAccount token (identity_token_file) and takes calls only from the bot's account "
        "(bot_service_account), checked with the TokenReview API. hmac (hosts without "
        "Kubernetes, e.g. Slurm nodes): this node's own read/mutate tokens",
    )
    audience: str = Field(
        "gpubot",
        pattern=_AUDIENCE,
        description="serviceaccount: the audience of the bot's and the agent's tokens",
    )
    identity_token_file: Path = Field(
        Path("/var/run/secrets/gpubot/token"),
        description="serviceaccount: the agent's projected token for `audience`, sent with "
        "its XID events; re-read on each send",
    )
    bot_service_account: str = Field(
        "system:serviceaccount:gpubot:gpubot",
        pattern=r"^system:serviceaccount:[a-z0-9-]{1,63}:[a-z0-9.-]{1,253}$",
        description="serviceaccount: the only caller the agent takes, reads and actions "
        "(system:serviceaccount:<namespace>:<bot's ServiceAccount>)",
    )
    bot_audience: Literal["per_node", "shared"] = Field(
        "per_node",
        description="serviceaccount: the audience of the bot's tokens, as the bot's cluster "
        "sets it: per_node `<audience>:<this node>` (a token another agent received does "
        "not open this one), shared `audience`",
    )
    api_url: str = Field(
        "https://kubernetes.default.svc",
        pattern=r"^https?://[A-Za-z0-9.:\[\]-]{1,255}(/[A-Za-z0-9._/-]*)?$",
        description="serviceaccount: the API server the agent sends TokenReviews to",
    )
    api_token_file: Path = Field(
        Path("/var/run/secrets/kubernetes.io/serviceaccount/token"),
        description="serviceaccount: the agent's token for the API server (create "
        "tokenreviews), re-read on each review",
    )
    api_ca_file: Path | None = Field(
        Path("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"),
        description="serviceaccount: the API server's CA bundle",
    )
    review_cache_seconds: float = Field(
        10.0, ge=0, le=300, description="serviceaccount: how long a token's review is reused"
    )
    read_only: bool = Field(
        False,
        description="serviceaccount: refuse every action (403), reads only; in hmac mode an "
        "agent without a mutate token is read-only",
    )

    # All interfaces by default: the bot reaches a DaemonSet pod over the pod network.
    listen: str = Field("0.0.0.0:9400", description="HOST:PORT the agent's HTTP API binds")
    node: str | None = Field(None, description="this node's name (default: the host name)")
    cluster: str = Field("sim", description="the cluster label on forwarded XID events")
    token_file: Path | None = Field(
        None,
        description="bot side, hmac clusters: file with the agent master secret, when "
        "GPUBOT_AGENT_TOKEN is unset (each node's tokens are derived from it; never give it "
        "to an agent)",
    )
    read_token_file: Path | None = Field(
        None,
        description="hmac: this node's read token, when GPUBOT_AGENT_READ_TOKEN is unset "
        "(`gpubot agent-token --node NAME --scope read`)",
    )
    mutate_token_file: Path | None = Field(
        None,
        description="hmac: this node's mutate token, when GPUBOT_AGENT_MUTATE_TOKEN is "
        "unset; without one the agent is read-only",
    )
    bot_url: str | None = Field(
        None, description="bot base URL for XID events (POST {bot_url}/agent/events); off if unset"
    )
    xid_window_seconds: float = Field(
        300.0, gt=0, description="repeat XIDs of one GPU within this window are one incident"
    )
    reset_timeout_seconds: float = Field(120.0, gt=0, description="limit for nvidia-smi -r")
    dcgmi_path: Path | None = Field(
        None, description="DCGM's dcgmi for diagnostics (default: dcgmi on the agent's PATH)"
    )
    dcgm_host: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9\[][A-Za-z0-9.:\[\]-]{0,252}$",
        description="the DCGM host engine dcgmi talks to (`dcgmi --host`), e.g. the node's "
        "address and 5555 for the GPU Operator's nvidia-dcgm; default: dcgmi's own (localhost)",
    )
    diag_timeout_seconds: float | None = Field(
        None,
        gt=0,
        le=4 * 3600,
        description="limit for one `dcgmi diag` run (default by level: 300 s, 900 s, 3600 s)",
    )
    simulated_reset_seconds: float = Field(
        0.0, ge=0, le=600, description="--driver simulated: how long a GPU reset takes"
    )


def _default_clusters() -> list[ClusterSettings]:
    return [ClusterSettings(name="sim", backend="simulated")]


class Settings(BaseSettings):
    """gpubot's configuration. Secrets come only from the environment."""

    model_config = SettingsConfigDict(
        env_prefix="GPUBOT_", env_nested_delimiter="__", extra="forbid"
    )

    slack: SlackSettings = Field(default_factory=SlackSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    runbooks: RunbookSettings = Field(default_factory=RunbookSettings)
    clusters: list[ClusterSettings] = Field(default_factory=_default_clusters, min_length=1)
    default_cluster: str | None = Field(
        None,
        description="the cluster of an alert without a `cluster` label and of a command "
        "without cluster=; unset: the only cluster, and with several, such an alert is "
        "refused (logged, counted, said in the channel)",
    )
    policy: PolicySettings = Field(default_factory=PolicySettings)
    web: WebSettings = Field(default_factory=WebSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    dry_run: bool = Field(False, description="plan and record every step, change nothing")
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    reports: ReportSettings = Field(default_factory=ReportSettings)
    reclaim: ReclaimSettings = Field(default_factory=ReclaimSettings)
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)

    slack_bot_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_BOT_TOKEN")
    )
    slack_signing_secret: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET")
    )
    slack_app_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_APP_TOKEN")
    )
    webhook_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GPUBOT_WEBHOOK_TOKEN")
    )
    agent_token: SecretStr | None = Field(None, validation_alias=AliasChoices("GPUBOT_AGENT_TOKEN"))
    agent_read_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GPUBOT_AGENT_READ_TOKEN")
    )
    agent_mutate_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GPUBOT_AGENT_MUTATE_TOKEN")
    )
    audit_key: SecretStr | None = Field(None, validation_alias=AliasChoices("GPUBOT_AUDIT_KEY"))
    pod_name: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="the bot's own pod (GPUBOT_POD_NAME, from the downward API): the tokens it "
        "requests for the agents are bound to it, so they die with it",
    )
    pod_uid: str | None = Field(
        None,
        pattern=r"^[0-9a-f-]{1,64}$",
        description="that pod's uid (GPUBOT_POD_UID)",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment overrides the file, so a Secret or a Helm value can patch one key;
        # never who the operators are (see _FileOnlyIdentity).
        return _FileOnlyIdentity(env_settings), init_settings, file_secret_settings

    def agent_token_value(self) -> str | None:
        """The bot's agent master secret: GPUBOT_AGENT_TOKEN, else agent.token_file's first line."""
        return _secret(self.agent_token, self.agent.token_file, "agent.token_file")

    def agent_node_tokens(self) -> tuple[str | None, str | None]:
        """An agent's own (read, mutate) tokens, from the environment or the token files."""
        return (
            _secret(self.agent_read_token, self.agent.read_token_file, "agent.read_token_file"),
            _secret(
                self.agent_mutate_token, self.agent.mutate_token_file, "agent.mutate_token_file"
            ),
        )

    def cluster(self, name: str) -> ClusterSettings | None:
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def fallback_cluster(self) -> str | None:
        """Where an alert without a `cluster` label goes: `default_cluster`, else the only
        configured cluster; None when several are configured and none is the default."""
        return unlabelled_cluster(
            default=self.default_cluster, configured=[c.name for c in self.clusters]
        )

    @model_validator(mode="after")
    def _known_default_cluster(self) -> Settings:
        names = [c.name for c in self.clusters]
        if self.default_cluster is not None and self.default_cluster not in names:
            raise ValueError(
                f"default_cluster: {self.default_cluster!r} is not a configured cluster "
                f"(clusters: {', '.join(names)})"
            )
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise ValueError(f"clusters: {duplicate!r} is configured twice")
        return self


class _FileOnlyIdentity(PydanticBaseSettingsSource):
    """The environment, refusing any value for who the break-glass operators are: whoever
    runs a command sets its environment, so a key or identity from there would let them be
    someone else (GPUBOT_POLICY__OPERATOR_KEYS, or `operator_keys` in GPUBOT_POLICY's JSON)."""

    def __init__(self, inner: PydanticBaseSettingsSource) -> None:
        super().__init__(inner.settings_cls)
        self._inner = inner

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._inner.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        data = self._inner()
        policy = data.get("policy")
        if isinstance(policy, dict):
            for key in policy:
                if str(key).lower() in _FILE_ONLY:
                    raise ConfigError(
                        f"GPUBOT_POLICY__{str(key).upper()}: policy.{str(key).lower()} is read "
                        "from the config file only, never from the environment"
                    )
        return data


_FILE_ONLY = frozenset({"operator_keys", "operators"})


def _secret(value: SecretStr | None, path: Path | None, key: str) -> str | None:
    """A secret from the environment, else the first line of a file; None when neither is set."""
    if value is not None:
        return value.get_secret_value() or None
    if path is None:
        return None
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror}") from exc
    if not token:
        raise ConfigError(f"{key}: {path} is empty")
    return token


# Where the Helm chart mounts the config in the bot's pod, so `kubectl exec deploy/gpubot --
# gpubot runs` reads the same file as serve without --config.
DEFAULT_CONFIG = Path("/etc/gpubot/config/config.yaml")
CONFIG_ENV = "GPUBOT_CONFIG"


def find_config(given: Path | None) -> Path | None:
    """The config file a command reads, found as kubectl finds its kubeconfig: `--config`,
    else $GPUBOT_CONFIG, else DEFAULT_CONFIG when it exists; None: no file (built-in
    defaults). A file named by the flag or the variable must exist (ConfigError)."""
    if given is not None:
        if not given.is_file():
            raise ConfigError(f"{given}: no such config file")
        return given
    named = os.environ.get(CONFIG_ENV, "")
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={named}: no such config file")
        return path
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


def load_settings(path: Path | None = None, **overrides: Any) -> Settings:
    """Settings from `path` (YAML) and the environment; ConfigError with one line if invalid."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else "?"
            raise ConfigError(
                f"{path}:{line}: invalid YAML: {getattr(exc, 'problem', exc)}"
            ) from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: config must be a mapping of sections")
        data = loaded or {}
    data.update(overrides)
    try:
        return Settings(**data)
    except ValidationError as exc:
        source = f"{path}: " if path else ""
        raise ConfigError(first_problem(exc, prefix=source)) from exc

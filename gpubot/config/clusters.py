"""Settings for the clusters: backend, API access, node agents, Slurm."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    model_validator,
)

from gpubot.config.base import _AUDIENCE, _Section


class ClusterAgentSettings(_Section):
    """Where a node's agent is: an address the cluster reports for that node, plus a port."""

    address: Literal["internal_ip", "agent_pod"] = Field(
        "internal_ip",
        description="internal_ip: the Node's InternalIP (agent on a hostPort); agent_pod: the "
        "IP of the agent pod scheduled on that node (namespace + selector)",
    )
    port: int = Field(9400, ge=1, le=65535, description="the agent's port at that address")
    scheme: Literal["http", "https"] = Field(
        "http", description="how the bot speaks to the agents (https: with ca_file)"
    )
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
    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,62}$",
        description="the alert's `cluster` label (or a command's cluster=) picks this cluster",
    )
    backend: Literal["simulated", "kubernetes", "slurm"] = Field(
        "simulated",
        description="simulated (built in, 16 nodes of 8 H100), kubernetes (the official client; "
        "the requests every alert sends, node PATCH and GET, pod LIST and Event POST, go over "
        "aiohttp with the same server, CA, client certificate and token, or through the client "
        "where its settings name a proxy or socket options) or slurm (the Slurm commands on "
        "this host)",
    )
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


def _default_clusters() -> list[ClusterSettings]:
    return [ClusterSettings(name="sim", backend="simulated")]

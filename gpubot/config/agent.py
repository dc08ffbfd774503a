"""Settings for the node agent (`gpubot agent`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
)

from gpubot.config.base import _AUDIENCE, _Section


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

"""Settings for the serving process: store, runbooks, evidence, web, log, leader election."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
)

from gpubot.config.base import _Section


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


class LeaderElectionSettings(_Section):
    """HA: replicas share the store; the one holding a Kubernetes Lease executes steps."""

    enabled: bool = Field(False, description="elect a leader on a coordination.k8s.io Lease")
    cluster: str | None = Field(
        None,
        description="cluster whose API holds the Lease (default: the first kubernetes cluster)",
    )
    namespace: str = Field("gpubot", description="the namespace of the Lease")
    lease_name: str = Field("gpubot-leader", description="the Lease's name")
    identity: str | None = Field(None, description="this replica's name (default: host name)")
    lease_seconds: float = Field(
        15.0, gt=1, description="a leader that has not renewed for this long loses the Lease"
    )
    renew_seconds: float = Field(5.0, gt=0, description="how often the leader renews it")
    shards: int = Field(
        1,
        ge=1,
        le=64,
        description=(
            "1: the leader executes every step; more: the nodes fall into this many shards, "
            "each on a Lease of its own, and each replica executes the steps of the shards "
            "it holds (a fair share; the shards of a replica that dies move to the others). "
            "Needs a PostgreSQL store"
        ),
    )


class WebSettings(_Section):
    host: str = Field("127.0.0.1", description="the address `serve` binds (--host wins)")
    port: int = Field(8080, ge=0, le=65535, description="the port `serve` binds (--port wins)")
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

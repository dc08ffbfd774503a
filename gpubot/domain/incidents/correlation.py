"""Incidents and the alerts attached to them; how alerts are correlated into incidents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from gpubot.domain.incidents.alerts import NODE_LABELS, Alert, AlertmanagerPayload
from gpubot.knowledge.outside_numbers import ascii_int, is_gpu_uuid
from gpubot.knowledge.xid.catalog import explain
from gpubot.knowledge.xid.recovery import RECOVERY_XID, parse_recovery, recovery_from_label

# Added to XID alerts by the bot, from NVIDIA's catalog; never sent by Alertmanager.
XID_ACTION_LABEL = "gpubot_xid_action"
# Added to XID 154 alerts by the bot: the recovery action the driver announced (GPU_RESET,
# NODE_REBOOT, DRAIN_AND_RESET, DRAIN_P2P, NONE), from the alert's `recovery_action` label
# (NVML's name or number) or from the driver's message in its description or summary.
XID_RECOVERY_LABEL = "gpubot_xid_recovery"
RECOVERY_SOURCE_LABEL = "recovery_action"

# Alerts about a workload, not a node: one incident per pod even when pods share a node.
# An alert rule can choose with the label `gpubot_scope: pod | node`.
SCOPE_LABEL = "gpubot_scope"
POD_SCOPED_ALERTS = frozenset({"GPUIdleAllocated", "PodOOMKilled"})
# The cluster of an alert with no `cluster` label when no cluster is the default (several
# are configured and none is named `default_cluster`): matches no configured cluster, so the
# service says so instead of acting.
NO_CLUSTER = ""


def unlabelled_cluster(*, default: str | None, configured: Sequence[str]) -> str | None:
    """The cluster of an alert without a `cluster` label: the configured default, else the
    only cluster; None when several are configured and none is the default."""
    if default is not None:
        return default
    return configured[0] if len(configured) == 1 else None


class IncidentStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


@dataclass(frozen=True)
class AlertObservation:
    """One alert from a payload, with the correlation key computed."""

    fingerprint: str
    starts_at: datetime
    ends_at: datetime | None
    status: str
    alertname: str
    cluster: str
    node: str | None
    severity: str
    summary: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    generator_url: str
    group_key: str

    @property
    def correlation_key(self) -> str:
        """Alerts about the same problem on the same node share one incident (one run).

        Workload alerts (GPUIdleAllocated, PodOOMKilled, or `gpubot_scope: pod`) key on the
        pod, so two idle pods on one node are two incidents; so do pod alerts without a node
        label (kube-state-metrics' OOMKilled), not one per cluster.
        """
        ns, pod = self.labels.get("namespace"), self.labels.get("pod")
        workload = f"{ns}/{pod}" if ns and pod else None
        scope = self.labels.get(SCOPE_LABEL) or (
            "pod" if self.alertname in POD_SCOPED_ALERTS else "node"
        )
        subject = (workload or self.node) if scope == "pod" else (self.node or workload)
        return f"{self.cluster}/{self.alertname}/{subject or '-'}"


def gpu_fault(labels: Mapping[str, str]) -> str | None:
    """Which fault of a node an XID alert reports: its GPU (UUID, else index) and its XID;
    None for an alert without an `xid` label. Alerts of one node share one incident; one
    with another fault than the incident's own becomes a follow-up incident of its own (its
    own run) once the node's run has ended, and is held until then."""
    xid = ascii_int(labels.get("xid", ""))
    if xid is None:
        return None
    uuid, index = labels.get("UUID", ""), ascii_int(labels.get("gpu", ""))
    gpu = uuid if is_gpu_uuid(uuid) else (str(index) if index is not None else "-")
    return f"gpu {gpu} xid {xid}"


def follow_up_key(incident_key: str, fault: str) -> str:
    """The key of the follow-up incident for `fault` on the node of `incident_key`: one open
    follow-up per fault (the store's unique open key)."""
    return f"{incident_key}#{fault}"


def observations(
    payload: AlertmanagerPayload, *, default_cluster: str | None
) -> list[AlertObservation]:
    """Flatten a webhook payload into per-alert observations. An alert without a `cluster`
    label belongs to `default_cluster` (None: to no cluster)."""
    return [
        observe(alert, group_key=payload.group_key, default_cluster=default_cluster)
        for alert in payload.alerts
    ]


def observe(alert: Alert, *, group_key: str, default_cluster: str | None) -> AlertObservation:
    labels = dict(alert.labels)
    annotations = dict(alert.annotations)
    if (action := xid_action(labels.get("xid", ""))) is not None:
        # Derived, so runbooks can route by NVIDIA's bucket: xid_action=~"RESET_GPU|…".
        labels[XID_ACTION_LABEL] = action
    # Only ever derived: a sender cannot pick the route by setting the label itself.
    labels.pop(XID_RECOVERY_LABEL, None)
    if (recovery := xid_recovery(labels, annotations)) is not None:
        labels[XID_RECOVERY_LABEL] = recovery
    node = next((labels[name] for name in NODE_LABELS if labels.get(name)), None)
    summary = annotations.get("summary") or annotations.get("description") or alert.alertname
    return AlertObservation(
        fingerprint=alert.fingerprint,
        starts_at=alert.starts_at,
        ends_at=alert.ends_at,
        status=alert.status,
        alertname=alert.alertname,
        cluster=labels.get("cluster") or default_cluster or NO_CLUSTER,
        node=node,
        severity=labels.get("severity", "warning"),
        summary=summary,
        labels=labels,
        annotations=annotations,
        generator_url=alert.generator_url,
        group_key=group_key,
    )


def xid_action(code: str) -> str | None:
    """NVIDIA's immediate-action bucket for an XID label value, or None."""
    value = ascii_int(code)
    if value is None:
        return None
    info = explain(value)
    return info.action if info is not None else None


def xid_recovery(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The recovery action an XID 154 alert carries, or None (not 154, or not stated)."""
    if ascii_int(labels.get("xid", "")) != RECOVERY_XID:
        return None
    action = recovery_from_label(labels.get(RECOVERY_SOURCE_LABEL, ""))
    if action is None:
        for name in ("description", "summary"):
            change = parse_recovery(annotations.get(name, "")[:4096])
            if change is not None:
                action = change.action
                break
    return action.value if action is not None else None


@dataclass(frozen=True)
class Incident:
    id: str
    key: str
    status: IncidentStatus
    alertname: str
    cluster: str
    node: str | None
    severity: str
    summary: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    generator_url: str
    created_at: datetime
    updated_at: datetime
    resolved_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.status is IncidentStatus.OPEN


@dataclass(frozen=True)
class AlertRecord:
    fingerprint: str
    starts_at: datetime
    incident_id: str
    status: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    ends_at: datetime | None = None
    received_at: datetime | None = None
    last_seen_at: datetime | None = None

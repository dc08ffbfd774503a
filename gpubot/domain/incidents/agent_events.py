"""What a node agent may post: XID alerts of its own GPUs, shaped as its watcher sends them."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from gpubot.domain.k8s_names import check_node_name

AGENT_ALERTNAME = "GPUXidError"
# Every label the agent's XID watcher sets (gpubot/agent/xid_watcher.py); nothing else.
# No pod, namespace or container: an agent knows its GPUs, not the workloads on them.
AGENT_EVENT_LABELS = frozenset(
    {
        "alertname",
        "Hostname",
        "gpu",
        "UUID",
        "xid",
        "cluster",
        "severity",
        "source",
        "modelName",
        "recovery_action",
    }
)
_REQUIRED = ("alertname", "Hostname", "gpu", "xid", "cluster")
RefusalKind = Literal["malformed", "not_xid", "foreign_label", "other_node", "other_cluster"]


@dataclass(frozen=True)
class EventRefusal:
    """Why an agent's post is refused, whole: `status` 400 (not an alert body) or 403."""

    status: int
    kind: RefusalKind
    reason: str


def check_agent_events(
    body: bytes, *, node: str, clusters: Collection[str] | None
) -> EventRefusal | None:
    """None when every alert (and the group's labels) is an XID alert of `node`, in one of
    `clusters` (None: any), with no label the XID watcher does not send."""
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return EventRefusal(400, "malformed", "malformed JSON")
    alerts = data.get("alerts") if isinstance(data, dict) else None
    if not isinstance(alerts, list):
        return EventRefusal(400, "malformed", "alerts: expected a list")
    if not alerts:
        return EventRefusal(403, "not_xid", "the events name no node; an agent posts its own XIDs")
    for i, alert in enumerate(alerts):
        labels = alert.get("labels") if isinstance(alert, dict) else None
        if not isinstance(labels, dict):
            return EventRefusal(400, "malformed", f"alerts.{i}.labels: expected a mapping")
        missing = [key for key in _REQUIRED if key not in labels]
        if missing:
            what = "names no node (Hostname label)" if "Hostname" in missing else "lacks"
            return EventRefusal(400, "malformed", f"alerts.{i}: {what}: {', '.join(missing)}")
        if refusal := _check_labels(f"alerts.{i}", labels, node=node, clusters=clusters):
            return refusal
    for key in ("groupLabels", "commonLabels"):
        labels = data.get(key, {})
        if not isinstance(labels, dict):
            return EventRefusal(400, "malformed", f"{key}: expected a mapping")
        if refusal := _check_labels(key, labels, node=node, clusters=clusters):
            return refusal
    return None


def _check_labels(
    where: str, labels: dict[Any, Any], *, node: str, clusters: Collection[str] | None
) -> EventRefusal | None:
    for key, value in labels.items():
        if not isinstance(value, str):
            return EventRefusal(400, "malformed", f"{where}.labels: a label value must be a string")
        if key not in AGENT_EVENT_LABELS:
            shown = str(key)[:64].encode("ascii", "backslashreplace").decode()
            return EventRefusal(
                403, "foreign_label", f"{where}: label {shown!r} is not one an agent sends"
            )
    if "alertname" in labels and labels["alertname"] != AGENT_ALERTNAME:
        return EventRefusal(403, "not_xid", f"{where}: an agent posts {AGENT_ALERTNAME} only")
    if "Hostname" in labels:
        try:
            named = check_node_name(labels["Hostname"])
        except ValueError as exc:
            return EventRefusal(400, "malformed", f"{where}.labels: {exc}")
        if named != node:
            return EventRefusal(
                403, "other_node", f"this token is not node {named}'s; nothing was stored"
            )
    if "cluster" in labels and clusters is not None and labels["cluster"] not in clusters:
        return EventRefusal(
            403, "other_cluster", f"{where}: this agent does not speak for that cluster"
        )
    return None

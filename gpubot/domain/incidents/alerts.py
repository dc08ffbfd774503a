"""Alertmanager webhook (version 4) payload, parsed at the edge."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpubot.domain.k8s_names import check_namespace, check_node_name
from gpubot.domain.validation_errors import first_problem
from gpubot.knowledge.outside_numbers import ascii_int, is_cluster_name, is_fingerprint, is_gpu_uuid

# Alertmanager sends Go's zero time for "no end yet" on firing alerts.
_GO_ZERO_YEAR = 1
# Labels that name the node an alert is about, in order of preference (DCGM exporter first).
NODE_LABELS = ("Hostname", "node", "kubernetes_node", "instance_node")
_XID_MAX = 99_999
_GPU_INDEX_MAX = 1_023


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class Alert(_Model):
    """One alert inside a webhook payload."""

    status: Literal["firing", "resolved"]
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: datetime = Field(alias="startsAt")
    ends_at: datetime | None = Field(default=None, alias="endsAt")
    generator_url: str = Field(default="", alias="generatorURL")
    fingerprint: str = Field(min_length=1, max_length=128)

    @field_validator("fingerprint", mode="after")
    @classmethod
    def _fingerprint(cls, value: str) -> str:
        if not is_fingerprint(value):
            raise ValueError(f"{value[:80]!r} is not an alert fingerprint (ASCII, at most 128)")
        return value

    @field_validator("labels", mode="after")
    @classmethod
    def _labels_gpubot_reads(cls, labels: dict[str, str]) -> dict[str, str]:
        """The labels gpubot acts on are full-matched ASCII; other labels are only data."""
        if problem := label_problem(labels):
            raise ValueError(problem)
        return labels

    @field_validator("ends_at", mode="after")
    @classmethod
    def _zero_time_is_none(cls, value: datetime | None) -> datetime | None:
        if value is None or value.year <= _GO_ZERO_YEAR:
            return None
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    @field_validator("starts_at", mode="after")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", "")


class _Envelope(_Model):
    """The body Alertmanager POSTs to a webhook receiver, without judging its alerts."""

    version: Literal["4"]
    group_key: str = Field(alias="groupKey")
    status: Literal["firing", "resolved"]
    receiver: str = ""
    group_labels: dict[str, str] = Field(default_factory=dict, alias="groupLabels")
    common_labels: dict[str, str] = Field(default_factory=dict, alias="commonLabels")
    common_annotations: dict[str, str] = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str = Field(default="", alias="externalURL")
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts", ge=0)


class AlertmanagerPayload(_Envelope):
    """The body Alertmanager POSTs to a webhook receiver."""

    alerts: list[Alert] = Field(min_length=1)


class _RawPayload(_Envelope):
    alerts: list[Any] = Field(min_length=1)


@dataclass(frozen=True)
class RejectedAlert:
    """An alert of a payload that cannot be used, and why; the payload's other alerts can."""

    index: int
    fingerprint: str  # as sent, if it was a short ASCII string; else ""
    alertname: str
    reason: str


@dataclass(frozen=True)
class ParsedWebhook:
    """A webhook body judged alert by alert."""

    payload: AlertmanagerPayload | None  # None when no alert in it could be used
    rejected: tuple[RejectedAlert, ...]


def parse_webhook(body: bytes | str) -> ParsedWebhook:
    """Parse a webhook body; one bad alert rejects that alert, not the others.

    Raises ValidationError only when the body itself is unusable: not JSON, nested deeper
    than the parser allows, not version 4, or no alerts at all.
    """
    raw = _RawPayload.model_validate_json(body)
    good: list[Alert] = []
    rejected: list[RejectedAlert] = []
    for index, item in enumerate(raw.alerts):
        try:
            good.append(Alert.model_validate(item))
        except ValidationError as exc:
            rejected.append(_rejected(index, item, first_problem(exc)))
    envelope = raw.model_dump(by_alias=True, exclude={"alerts"})
    payload = AlertmanagerPayload.model_validate({**envelope, "alerts": good}) if good else None
    return ParsedWebhook(payload=payload, rejected=tuple(rejected))


def _rejected(index: int, item: Any, reason: str) -> RejectedAlert:
    fields = item if isinstance(item, dict) else {}
    fingerprint = fields.get("fingerprint")
    labels = fields.get("labels")
    name = labels.get("alertname") if isinstance(labels, dict) else None
    return RejectedAlert(
        index=index,
        fingerprint=fingerprint
        if isinstance(fingerprint, str) and is_fingerprint(fingerprint)
        else "",
        alertname=name[:120] if isinstance(name, str) else "",
        reason=f"alerts.{index}.{reason}",
    )


def label_problem(labels: dict[str, str]) -> str | None:
    """Why a label gpubot acts on cannot be used (node, XID, GPU, pod, cluster), or None."""
    for name in NODE_LABELS:
        if (value := labels.get(name)) and (problem := _check(check_node_name, value)):
            return f"{name}: {problem}"
    for name, high in (("xid", _XID_MAX), ("gpu", _GPU_INDEX_MAX)):
        value = labels.get(name)
        if value:
            number = ascii_int(value)
            if number is None or number > high:
                return f"{name}: {value[:40]!r} is not a number of ASCII digits up to {high}"
    if (uuid := labels.get("UUID")) and not is_gpu_uuid(uuid):
        return f"UUID: {uuid[:80]!r} is not a GPU UUID (GPU-… or MIG-…)"
    if (namespace := labels.get("namespace")) and (problem := _check(check_namespace, namespace)):
        return f"namespace: {problem}"
    if (pod := labels.get("pod")) and (problem := _check(check_node_name, pod)):
        return f"pod: {problem.replace('node name', 'pod name')}"
    if (cluster := labels.get("cluster")) and not is_cluster_name(cluster):
        return f"cluster: {cluster[:80]!r} is not a cluster name"
    return None


def _check(rule: Callable[[str], str], value: str) -> str | None:
    try:
        rule(value[:300])
    except ValueError as exc:
        return str(exc)
    return None if len(value) <= 300 else "longer than 300 characters"

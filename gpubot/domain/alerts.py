"""Alertmanager webhook (version 4) payload, parsed at the edge."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Alertmanager sends Go's zero time for "no end yet" on firing alerts.
_GO_ZERO_YEAR = 1


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


class AlertmanagerPayload(_Model):
    """The body Alertmanager POSTs to a webhook receiver."""

    version: Literal["4"]
    group_key: str = Field(alias="groupKey")
    status: Literal["firing", "resolved"]
    receiver: str = ""
    group_labels: dict[str, str] = Field(default_factory=dict, alias="groupLabels")
    common_labels: dict[str, str] = Field(default_factory=dict, alias="commonLabels")
    common_annotations: dict[str, str] = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str = Field(default="", alias="externalURL")
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts", ge=0)
    alerts: list[Alert] = Field(min_length=1)

"""Settings for the idle-GPU report and idle-GPU reclamation."""

from __future__ import annotations

from datetime import timedelta

from pydantic import (
    Field,
    field_validator,
)

from gpubot.config.base import _CRON_FIELD, _duration, _Section
from gpubot.domain.fleet.reclaim import SYSTEM_NAMESPACES, parse_owner


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

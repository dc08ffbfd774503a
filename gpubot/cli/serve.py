"""`gpubot serve`'s log: set up from config and flags, then what this process serves."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import SecretStr

from gpubot.logs import LogFormat, LogLevel, configure_logging, redact_url

if TYPE_CHECKING:
    from gpubot.config import Settings
    from gpubot.wiring import App

log = logging.getLogger("gpubot.serve")


def secret_values(settings: Settings) -> list[str]:
    """Every secret the settings hold, so that no log line can carry one by accident."""
    values = [
        v.get_secret_value()
        for v in (getattr(settings, name) for name in type(settings).model_fields)
        if isinstance(v, SecretStr)
    ]
    try:
        master = settings.agent_token_value()  # GPUBOT_AGENT_TOKEN or agent.token_file
    except Exception:  # an unreadable token file is reported where the token is used
        master = None
    return [v for v in (*values, master) if v]


def setup_logging(
    settings: Settings,
    *,
    fmt: LogFormat | None = None,
    level: LogLevel | None = None,
    extra_secrets: Iterable[str | None] = (),
) -> logging.Handler:
    """The flags win over the config file's `log` section. `extra_secrets`: values to redact
    besides the settings' own (the agent's node tokens read from files)."""
    return configure_logging(
        fmt=fmt or settings.log.format,
        level=level or settings.log.level,
        secrets=[*secret_values(settings), *(v for v in extra_secrets if v)],
    )


def log_start(app: App) -> None:
    """One line each: the store, the clusters, Slack, the runbooks, leader election."""
    s = app.settings
    store = redact_url(s.store.url)
    log.info("store: %s", store, extra={"event": "serve.store", "reason": store})
    clusters = [f"{c.name} ({c.backend})" for c in s.clusters]
    log.info(
        "%d cluster(s) configured: %s",
        len(clusters),
        ", ".join(clusters),
        extra={"event": "serve.clusters", "count": len(clusters), "reason": ", ".join(clusters)},
    )
    log.info("slack: %s", _slack_mode(app), extra={"event": "serve.slack", "status": s.slack.mode})
    names = sorted(item.runbook.name for item in app.runbooks)
    log.info(
        "%d runbook(s) loaded: %s",
        len(names),
        ", ".join(names) or "-",
        extra={"event": "serve.runbooks", "count": len(names), "reason": ", ".join(names)},
    )
    le = s.leader_election
    election = (
        f"on, Lease {le.namespace}/{le.lease_name}" if le.enabled else "off (this replica leads)"
    )
    log.info("leader election: %s", election, extra={"event": "serve.leader_election"})
    if s.dry_run:
        log.warning("dry_run: every step is planned and recorded, nothing is changed")


def _slack_mode(app: App) -> str:
    s = app.settings
    if s.slack.mode == "off":
        return "off: incident threads are printed to stdout"
    if s.slack_bot_token is None:
        return f"{s.slack.mode} mode set, but SLACK_BOT_TOKEN is not: threads go to stdout"
    ids = f"workspace {s.slack.team_id or 'any'}, app {s.slack.app_id or 'any'}"
    if s.slack.enterprise_id:
        ids += f", org {s.slack.enterprise_id}"
    if s.slack.mode == "http":
        return f"HTTP mode (POST /slack/events), channel {s.slack.channel}, {ids}"
    socket = "Socket Mode" if s.slack_app_token is not None else "Socket Mode without an app token"
    return f"{socket}, channel {s.slack.channel}, {ids}"

"""Escalation from a GPU's history: reset, reboot, hardware service, diagnostics, or the
application, decided from the ledger, the policy and the time (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from gpubot.domain.gpus.ledger import GpuEvent, open_service_mark, since_last_clear

Decision = Literal["reset", "reboot", "service", "diagnostics", "check_application"]
# Which runbook asks: the reset kind (xid79: reset, reboot, service) or the routed XIDs
# (xid-route: diagnostics or the application).
Remedy = Literal["reset", "route"]


@dataclass(frozen=True)
class EscalationPolicy:
    """policy.escalation: when history changes what an XID run does.

    NVIDIA's XID catalog: XID 13 and 31 are usually the application's fault, but a repeat
    on the same GPU means run diagnostics. gpud sends a GPU for hardware inspection after
    two reboots for the same XID.
    """

    xid_repeat_window: timedelta = timedelta(days=7)
    repeat_xids: frozenset[int] = field(default_factory=lambda: frozenset({13, 31}))
    max_resets: int = 1
    reset_window: timedelta = timedelta(days=7)
    max_reboots: int = 2
    reboot_window: timedelta = timedelta(days=30)


@dataclass(frozen=True)
class Escalation:
    decision: Decision
    reason: str  # one line, for the thread


def _days(span: timedelta) -> str:
    days = span.total_seconds() / 86400
    return f"{days:g} d" if days >= 1 else f"{span.total_seconds() / 3600:g} h"


def _when(event: GpuEvent) -> str:
    return event.at.strftime("%Y-%m-%d %H:%M") + "Z"


def decide(
    history: Sequence[GpuEvent],
    *,
    xid: int,
    remedy: Remedy,
    policy: EscalationPolicy,
    now: datetime,
    incident_id: str | None = None,
) -> Escalation:
    """What this XID on this GPU calls for, given its earlier events.

    Events of `incident_id` (this incident, recorded before a restart) do not count as
    earlier ones. A GPU with an open service mark gets no automatic remediation at all.
    """
    mark = open_service_mark(history)
    if mark is not None:
        why = f" ({mark.detail})" if mark.detail else ""
        return Escalation(
            "service",
            f"the GPU is marked for service since {_when(mark)}{why}: no automatic reset or "
            "reboot until a person clears the mark (gpubot gpus clear-mark)",
        )
    earlier = [
        e
        for e in since_last_clear(history)
        if e.at <= now and (incident_id is None or e.incident_id != incident_id)
    ]
    if remedy == "route":
        return _route(earlier, xid=xid, policy=policy, now=now)
    return _reset(earlier, xid=xid, policy=policy, now=now)


def _route(
    earlier: list[GpuEvent], *, xid: int, policy: EscalationPolicy, now: datetime
) -> Escalation:
    if xid not in policy.repeat_xids:
        return Escalation(
            "check_application", f"XID {xid}: no repeat rule; NVIDIA's catalog action applies"
        )
    since = now - policy.xid_repeat_window
    seen = [e for e in earlier if e.kind == "xid" and e.xid == xid and e.at >= since]
    if seen:
        last = seen[-1]
        where = f" in {last.incident_id}" if last.incident_id else ""
        return Escalation(
            "diagnostics",
            f"XID {xid} again on the same GPU (last at {_when(last)}{where}, "
            f"{len(seen)} in the last {_days(policy.xid_repeat_window)}): run DCGM diagnostics",
        )
    return Escalation(
        "check_application",
        f"first XID {xid} on this GPU in {_days(policy.xid_repeat_window)}: check the application",
    )


def _reset(
    earlier: list[GpuEvent], *, xid: int, policy: EscalationPolicy, now: datetime
) -> Escalation:
    # A reboot asked without a code counts for every fault: it is the conservative reading.
    reboots = [
        e
        for e in earlier
        if e.kind == "reboot" and e.xid in (xid, None) and e.at >= now - policy.reboot_window
    ]
    if len(reboots) >= policy.max_reboots:
        return Escalation(
            "service",
            f"already rebooted {len(reboots)} time(s) for XID {xid} in the last "
            f"{_days(policy.reboot_window)} (cap {policy.max_reboots}): mark for hardware "
            "service",
        )
    resets = [e for e in earlier if e.kind == "reset" and e.at >= now - policy.reset_window]
    if not resets and policy.max_resets <= 0:
        return Escalation("reboot", "no GPU reset is allowed (max_resets 0): ask for a reboot")
    if len(resets) >= policy.max_resets:
        return Escalation(
            "reboot",
            f"already reset {len(resets)} time(s) in the last {_days(policy.reset_window)} "
            f"(last at {_when(resets[-1])}; cap {policy.max_resets}): ask for a reboot instead",
        )
    return Escalation(
        "reset",
        f"{len(resets)} reset(s) in the last {_days(policy.reset_window)} "
        f"(cap {policy.max_resets}): reset the GPU",
    )

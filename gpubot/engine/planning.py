"""Plans without runs: what a runbook would do for a command or an alert payload, stored nowhere."""

from __future__ import annotations

from collections.abc import Mapping

from gpubot.actions.base import ClusterPorts
from gpubot.domain.alerts import AlertmanagerPayload
from gpubot.domain.incidents import Incident, IncidentStatus, observations
from gpubot.domain.plans import Plan
from gpubot.domain.runbooks import Runbook
from gpubot.engine.context import alert_context, resolve_params
from gpubot.engine.planner import make_plan, match_alert
from gpubot.engine.recorder import Engine
from gpubot.errors import InputError


def runbook_named(e: Engine, name: str) -> Runbook:
    if name not in e.runbooks:
        known = ", ".join(sorted(e.runbooks)) or "none"
        raise InputError(f"unknown runbook {name!r} (known: {known})")
    return e.runbooks[name]


def cluster_named(e: Engine, name: str) -> ClusterPorts:
    if name not in e.clusters:
        known = ", ".join(sorted(e.clusters)) or "none"
        raise InputError(f"unknown cluster {name!r} (configured: {known}); no action taken")
    return e.clusters[name]


async def plan_command(e: Engine, *, runbook: str, args: Mapping[str, str], cluster: str) -> Plan:
    """`/gpu plan` and `gpubot plan`: a runbook with typed arguments, from live state."""
    rb = runbook_named(e, runbook)
    base = alert_context(None)
    params = resolve_params(rb, base=base, given=args)
    return await make_plan(
        rb,
        base=base,
        params=params,
        cluster=cluster_named(e, cluster),
        registry=e.registry,
        clock=e.clock,
        ledger=e.store,
        escalation=e.policy.escalation,
    )


async def plan_alerts(e: Engine, payload: AlertmanagerPayload) -> list[Plan]:
    """Plans for every firing alert in a payload, as the runs would start (`gpubot plan`)."""
    plans: list[Plan] = []
    for item in observations(payload):
        if item.status != "firing":
            continue
        now = e.clock.now()
        incident = Incident(
            id="(not stored)",
            key=item.correlation_key,
            status=IncidentStatus.OPEN,
            alertname=item.alertname,
            cluster=item.cluster,
            node=item.node,
            severity=item.severity,
            summary=item.summary,
            labels=item.labels,
            annotations=item.annotations,
            generator_url=item.generator_url,
            created_at=now,
            updated_at=now,
        )
        for rb in match_alert(list(e.runbooks.values()), item.labels):
            base = alert_context(incident)
            params = resolve_params(rb, base=base, given={})
            plans.append(
                await make_plan(
                    rb,
                    base=base,
                    params=params,
                    cluster=cluster_named(e, item.cluster),
                    registry=e.registry,
                    clock=e.clock,
                    ledger=e.store,
                    escalation=e.policy.escalation,
                )
            )
    return plans

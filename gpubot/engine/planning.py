"""Planning: the inputs of a run, and the plan of each step from live state.

A plan is read-only: nothing it does changes the cluster or the store."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from gpubot.actions.base import ActionContext
from gpubot.domain.control.pools import PoolChoice
from gpubot.domain.gpus.escalation import EscalationPolicy
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.incidents.correlation import Incident, IncidentStatus, observations
from gpubot.domain.runbooks.plans import Plan, PlannedStep
from gpubot.domain.runbooks.spec import Runbook, runbooks_for_alert
from gpubot.domain.runbooks.templating import evaluate, render_value
from gpubot.domain.runbooks.variables import alert_context, resolve_params
from gpubot.domain.validation_errors import first_problem
from gpubot.engine.deps import Engine
from gpubot.engine.registry import Registry
from gpubot.errors import GpubotError, InputError, TemplateError
from gpubot.ports import Clock, ClusterPorts, GpuLedger


async def make_plan(
    runbook: Runbook,
    *,
    base: Mapping[str, Any],
    params: Mapping[str, Any],
    cluster: ClusterPorts,
    registry: Registry,
    clock: Clock,
    incident_id: str | None = None,
    ledger: GpuLedger | None = None,
    escalation: EscalationPolicy | None = None,
    diag_level: int | None = None,
    run_now: bool = False,
) -> Plan:
    """Describe every step; read-only steps' live results feed later `when` conditions.
    `ledger` and `escalation`: GPU history steps plan from the ledger (they write nothing).
    `run_now`: the run starts as soon as it is planned, so the automatic steps before the
    first one that waits for approval write for real at once: their plans skip the API
    server's dry run of that write (the write itself is refused the same way)."""
    ctx = ActionContext(
        cluster=cluster,
        clock=clock,
        actor="planner",
        reason="plan",
        dry_run=True,
        ledger=ledger,
        escalation=escalation or EscalationPolicy(),
        diag_level=diag_level,
        incident_id=incident_id,
    )
    outputs: dict[str, Any] = {}
    planned: list[PlannedStep] = []
    problems: list[str] = []
    warnings: list[str] = []
    waits = False  # a step before this one waits for approval
    for step in runbook.steps:
        spec = registry.get(step.action)
        waits = waits or step.approval != "auto"
        variables = {**base, "params": dict(params), "steps": outputs}
        will_run: bool | None = True
        if step.when:
            try:
                will_run = evaluate(step.when, variables)
            except TemplateError:
                will_run = None  # needs results only known at run time
        args: Mapping[str, Any] = step.args
        summary, problem = "", ""
        try:
            args = render_value(step.args, variables)
            typed = spec.params.model_validate(args)
            note = await spec.plan(replace(ctx, probe=waits or not run_now), typed)
            summary = note.summary
            if note.warning:
                warnings.append(f"step {step.id}: {note.warning}")
            if not spec.mutating:
                outputs[step.id] = {"status": "planned", "output": dict(note.facts), "error": ""}
        except TemplateError:
            summary = "arguments depend on earlier steps' results; rendered at run time"
        except ValidationError as exc:
            problem = first_problem(exc, prefix="invalid args: ")
        except GpubotError as exc:
            problem = str(exc)
        if problem:
            problems.append(f"step {step.id}: {problem}")
        if will_run is False:
            summary = f"skipped: condition `{step.when}` is false now ({summary})"
        planned.append(
            PlannedStep(
                id=step.id,
                action=step.action,
                approval=step.approval,
                approvers=step.approvers,
                mutating=spec.mutating,
                args=dict(args),
                summary=summary,
                will_run=will_run,
                when=step.when,
                problem=problem,
            )
        )
    target = params.get(runbook.target) if runbook.target else None
    return Plan(
        runbook=runbook.name,
        description=runbook.description,
        cluster=cluster.name,
        target=str(target) if target is not None else None,
        params=dict(params),
        steps=tuple(planned),
        incident_id=incident_id,
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


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


@dataclass(frozen=True)
class RunInputs:
    """What a run of a runbook starts from: its cluster's ports, the alert's variables, the
    typed parameters (rendered from the alert, or as typed) and the node they target."""

    runbook: Runbook
    cluster: ClusterPorts
    base: dict[str, Any]
    params: dict[str, Any]
    target: str | None


def run_inputs(
    e: Engine,
    runbook: Runbook,
    *,
    incident: Incident | None,
    given: Mapping[str, str],
    cluster: str,
) -> RunInputs:
    """InputError, one line, for an unknown cluster or parameters that do not fit."""
    ports = cluster_named(e, cluster)
    base = alert_context(incident)
    params = resolve_params(runbook, base=base, given=given)
    value = params.get(runbook.target) if runbook.target else None
    target = str(value) if value else None
    return RunInputs(runbook, ports, base, params, target)


async def plan_run(
    e: Engine, inputs: RunInputs, *, incident_id: str | None = None, run_now: bool = False
) -> Plan:
    """The plan of a run from live state, with the engine's registry, clock, ledger and
    escalation policy (the target node's pool's, where it sets its own); it names the target
    node's pool and mode, and why. `run_now`: see make_plan."""
    choice = await node_pool(e, inputs)
    pool = choice.pool.name if choice is not None else None
    plan = await make_plan(
        inputs.runbook,
        base=inputs.base,
        params=inputs.params,
        cluster=inputs.cluster,
        registry=e.registry,
        clock=e.clock,
        incident_id=incident_id,
        ledger=e.store,
        escalation=e.policy.escalation_of(pool),
        diag_level=e.policy.pool_diag_level.get(pool or ""),
        # A pool that only observes writes nothing: its plans keep the dry run.
        run_now=run_now and (choice is None or choice.pool.mode != "observe"),
    )
    return replace(plan, pool=choice) if choice is not None else plan


async def node_pool(e: Engine, inputs: RunInputs) -> PoolChoice | None:
    """The pool of the run's target node now (None without a target). A node that cannot
    be read is in the default pool, and the reason says so."""
    if inputs.target is None:
        return None
    try:
        info = await inputs.cluster.nodes.get_node(node=inputs.target, cached=True)
    except GpubotError as exc:
        return PoolChoice(e.policy.default_pool, f"{inputs.target} could not be read ({exc})")
    return e.policy.pool_for(cluster=inputs.cluster.name, labels=info.labels)


async def plan_command(e: Engine, *, runbook: str, args: Mapping[str, str], cluster: str) -> Plan:
    """`/gpu plan` and `gpubot plan`: a runbook with typed arguments, from live state."""
    rb = runbook_named(e, runbook)
    return await plan_run(e, run_inputs(e, rb, incident=None, given=args, cluster=cluster))


async def plan_alerts(e: Engine, payload: AlertmanagerPayload) -> list[Plan]:
    """Plans for every firing alert in a payload, as the runs would start (`gpubot plan`)."""
    plans: list[Plan] = []
    for item in observations(payload, default_cluster=e.alert_cluster):
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
        for rb in runbooks_for_alert(e.runbooks.values(), item.labels):
            inputs = run_inputs(e, rb, incident=incident, given={}, cluster=item.cluster)
            plans.append(await plan_run(e, inputs))
    return plans

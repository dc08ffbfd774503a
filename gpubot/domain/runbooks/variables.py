"""What templates see: the alert, the incident, the run's params and earlier step results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.k8s_names import check_namespace, check_node_name
from gpubot.domain.runbooks.runs import Run, StepState
from gpubot.domain.runbooks.spec import Param, Runbook
from gpubot.domain.runbooks.templating import render_value
from gpubot.errors import InputError, TemplateError


def alert_context(incident: Incident | None) -> dict[str, Any]:
    """The `alert` and `incident` template variables (empty for command runs)."""
    if incident is None:
        return {"alert": {"labels": {}, "annotations": {}}, "incident": {}}
    return {
        "alert": {"labels": dict(incident.labels), "annotations": dict(incident.annotations)},
        "incident": {
            "id": incident.id,
            "cluster": incident.cluster,
            "node": incident.node,
            "severity": incident.severity,
            "summary": incident.summary,
            "alertname": incident.alertname,
        },
    }


def _coerce(name: str, param: Param, value: str) -> Any:
    try:
        if param.type == "node" or param.type == "pod":
            return check_node_name(value)
        if param.type == "namespace":
            return check_namespace(value)
        if param.type == "int":
            return int(value)
    except ValueError as exc:
        raise InputError(f"parameter {name}: {exc}") from exc
    return value


def resolve_params(
    runbook: Runbook, *, base: Mapping[str, Any], given: Mapping[str, str]
) -> dict[str, Any]:
    """Command arguments win over rendered defaults; every value is type-checked."""
    unknown = sorted(set(given) - set(runbook.params))
    if unknown:
        known = ", ".join(runbook.params) or "none"
        raise InputError(f"{runbook.name} has no parameter {unknown[0]!r} (parameters: {known})")
    resolved: dict[str, Any] = {}
    for name, param in runbook.params.items():
        raw: Any = given.get(name)
        if raw is None and param.default is not None:
            try:
                raw = render_value(param.default, {**base, "args": dict(given)})
            except TemplateError:
                raw = None  # the alert lacks the label: treated as not given
        if raw is None or raw == "":
            if param.required:
                hint = f" ({param.description})" if param.description else ""
                raise InputError(f"{runbook.name} needs parameter {name}{hint}")
            resolved[name] = None
            continue
        resolved[name] = _coerce(name, param, str(raw))
    return resolved


# What `steps.<id>` holds: runbook validation checks templates against these names.
STEP_FIELDS = ("status", "output", "error")


def step_variables(state: StepState) -> dict[str, Any]:
    return {"status": state.status.value, "output": dict(state.output), "error": state.error}


def run_variables(run: Run, states: list[StepState]) -> dict[str, Any]:
    """What a running step's `when` and args see: the run's alert variables and params,
    every step's status, output and error so far, and the run itself."""
    return {
        **run.context,
        "params": dict(run.context.get("params", {})),
        "steps": {s.step_id: step_variables(s) for s in states},
        "run": {"id": run.id, "requested_by": run.requested_by, "dry_run": run.dry_run},
    }

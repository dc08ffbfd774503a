"""Checks of a loaded runbook against the action registry and the approval policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gpubot.domain.control.safety_caps import Policy
from gpubot.domain.runbooks.loader import LoadedRunbook
from gpubot.domain.runbooks.template_paths import references
from gpubot.domain.runbooks.templating import check_syntax
from gpubot.engine.registry import Registry
from gpubot.engine.runbook_arg_checks import literal_arg_problems, reference_problems


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_template(v) for v in value)
    return False


def _templates(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if _has_template(value) else []
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _templates(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _templates(v)]
    return []


def validate(
    loaded: LoadedRunbook, *, registry: Registry, policy: Policy | None = None
) -> list[str]:
    """Problems as `file:line: field: reason` lines; empty when the runbook is sound."""
    rb, problems = loaded.runbook, []

    def report(loc: Sequence[int | str], reason: str) -> None:
        field = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in loc).replace(".[", "[")
        problems.append(f"{loaded.path}:{loaded.line(loc)}: {field}: {reason}")

    for name, param in rb.params.items():
        if param.default and (err := check_syntax(param.default)):
            report(("params", name, "default"), f"template error: {err}")
    for i, step in enumerate(rb.steps):
        where: tuple[int | str, ...] = ("steps", i)
        if step.action not in registry:
            report((*where, "action"), f"unknown action {step.action!r}")
            continue
        spec = registry.get(step.action)
        if step.approval == "auto" and spec.mutating and not spec.auto_allowed:
            report(
                (*where, "approval"),
                f"{step.action} changes the cluster in a way that is not "
                "safely reversible; it needs approval: required or two-person",
            )
        if policy is not None and step.approval != "auto":
            group = step.approvers or policy.default_group
            if group not in policy.groups:
                report((*where, "approvers"), f"no approver group {group!r} in policy.groups")
        if step.when and (err := check_syntax(step.when, expression=True)):
            report((*where, "when"), f"expression error: {err}")
        for template in _templates(step.args):
            if err := check_syntax(template):
                report((*where, "args"), f"template error: {err}")
        # What would fail when the step runs: literal args against the action's schema
        # (templated ones are only known then), and what templates and `when` read.
        try:
            spec.params.model_validate(step.args)
        except ValidationError as exc:
            for reason in literal_arg_problems(exc, step.args):
                report((*where, "args"), reason)
        for template in _templates(step.args):
            for reason in reference_problems(rb, i, references(template), registry):
                report((*where, "args"), reason)
        if step.when:
            for reason in reference_problems(
                rb, i, references(step.when, expression=True), registry
            ):
                report((*where, "when"), reason)
    return problems

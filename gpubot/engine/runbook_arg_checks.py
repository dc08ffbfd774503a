"""Runbook checks that need the action registry: args against schemas, and what templates read.

Used by validation.validate, which both `serve` (at start-up) and `gpubot runbooks validate`
run, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gpubot.domain.runbooks.spec import Runbook
from gpubot.domain.runbooks.template_paths import Path
from gpubot.domain.runbooks.variables import STEP_FIELDS
from gpubot.engine.registry import Registry


def _templated(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_templated(v) for v in value)
    return False


def literal_arg_problems(exc: ValidationError, args: Mapping[str, Any]) -> list[str]:
    """The schema's complaints about args as written: not about an arg given by a template
    (its value is known only at run time), but unknown and missing args always."""
    out: list[str] = []
    for err in exc.errors():
        loc = err["loc"]
        if loc and isinstance(loc[0], str) and loc[0] in args and _templated(args[loc[0]]):
            continue
        field = ".".join(str(p) for p in loc)
        msg = err["msg"].removeprefix("Value error, ")
        out.append(f"{field}: {msg}" if field else msg)
    return out


def reference_problems(
    rb: Runbook, index: int, paths: Sequence[Path], registry: Registry
) -> list[str]:
    """What step `index` reads that cannot be there when it runs: an undeclared parameter,
    a step that is not an earlier one, a field a step result does not have, an output its
    action does not declare."""
    earlier = {s.id: s for s in rb.steps[:index]}
    later = {s.id for s in rb.steps[index:]}
    problems: list[str] = []
    for path in dict.fromkeys(paths):
        root, rest = path[0], path[1:]
        if root == "params" and rest and rest[0] not in rb.params:
            declared = ", ".join(rb.params) or "none"
            problems.append(f"params.{rest[0]} is not a declared parameter (declared: {declared})")
        if root != "steps" or not rest:
            continue
        step_id = rest[0]
        if step_id not in earlier:
            where = "this or a later step" if step_id in later else "no step of this runbook"
            problems.append(f"steps.{step_id}: {where}; only earlier steps' results exist")
            continue
        if len(rest) < 2:
            continue
        if rest[1] not in STEP_FIELDS:
            problems.append(
                f"steps.{step_id}.{rest[1]}: a step result has {', '.join(STEP_FIELDS)}"
            )
            continue
        if rest[1] != "output" or len(rest) < 3:
            continue
        action = earlier[step_id].action
        outputs = registry.get(action).outputs if action in registry else None
        if outputs is not None and rest[2] not in outputs:
            problems.append(
                f"steps.{step_id}.output.{rest[2]}: {action} has no output {rest[2]!r} "
                f"(outputs: {', '.join(outputs) or 'none'})"
            )
    return problems

"""Sandboxed rendering of runbook arguments and `when` conditions."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined
from jinja2 import TemplateError as JinjaError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from gpubot.errors import TemplateError

# Immutable sandbox: templates can read the alert and earlier outputs but call no methods
# that mutate, reach no attributes starting with "_", and import nothing.
_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


# What an operator's expression can raise at render time: `1 / 0`, `'a' + 1`, `None > 0`,
# the sandbox's range limit. All become one TemplateError that fails the step cleanly.
_RENDER_ERRORS = (JinjaError, ArithmeticError, TypeError, ValueError, LookupError)


@lru_cache(maxsize=512)
def _template(source: str) -> Any:
    return _ENV.from_string(source)


@lru_cache(maxsize=512)
def _expression(source: str) -> Any:
    return _ENV.compile_expression(source, undefined_to_none=False)


def render_value(value: Any, context: Mapping[str, Any]) -> Any:
    """Render every string inside `value` (dicts and lists too) against `context`."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        try:
            return _template(value).render(**context)
        except _RENDER_ERRORS as exc:
            raise TemplateError(f"cannot render {value!r}: {exc}") from exc
    if isinstance(value, Mapping):
        return {k: render_value(v, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render_value(v, context) for v in value]
    return value


def evaluate(condition: str, context: Mapping[str, Any]) -> bool:
    """Evaluate a `when` expression such as `steps.check.output.lost_gpus > 0`."""
    try:
        return bool(_expression(condition)(**context))
    except _RENDER_ERRORS as exc:
        raise TemplateError(f"cannot evaluate when: {condition!r}: {exc}") from exc


def check_syntax(source: str, *, expression: bool = False) -> str | None:
    """The syntax error in a template or expression, or None (for `runbooks validate`)."""
    try:
        if expression:
            _expression(source)
        else:
            _template(source)
    except JinjaError as exc:
        return str(exc)
    return None

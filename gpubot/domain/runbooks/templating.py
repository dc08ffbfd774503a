"""Sandboxed rendering of runbook arguments and `when` conditions."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, nodes
from jinja2 import TemplateError as JinjaError
from jinja2.parser import Parser
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


@lru_cache(maxsize=512)
def check_syntax(source: str, *, expression: bool = False) -> str | None:
    """The syntax error in a template or expression, or None (for `runbooks validate`).

    Jinja's parser, then the check its compiler adds (every filter and test exists); no
    code is generated: that is most of `runbooks validate`'s time, and render_value and
    evaluate compile each template when they first use it.
    """
    if not expression and "{{" not in source and "{%" not in source:
        return None  # render_value passes such a string through unrendered
    try:
        tree = _expression_tree(source) if expression else _ENV.parse(source)
    except JinjaError as exc:
        return exc.message or str(exc)  # the reason alone: str() appends "line N" lines
    named = (nodes.Filter, nodes.Test)
    for node in (n for n in (tree, *tree.find_all(named)) if isinstance(n, named)):
        kind, known = (
            ("filter", _ENV.filters) if isinstance(node, nodes.Filter) else ("test", _ENV.tests)
        )
        if node.name not in known:
            return f"No {kind} named {node.name!r}."  # Jinja's own words for it
    return None


def _expression_tree(source: str) -> nodes.Expr:
    """`source` parsed as compile_expression parses it: one expression, nothing after."""
    parser = Parser(_ENV, source, state="variable")
    expr = parser.parse_expression()
    if not parser.stream.eos:
        raise TemplateSyntaxError("chunk after expression", parser.stream.current.lineno)
    return expr

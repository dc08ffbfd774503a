"""Sandboxed rendering of runbook args and `when` conditions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpubot.domain.runbooks.templating import check_syntax, evaluate, render_value
from gpubot.errors import GpubotError, TemplateError

CONTEXT: dict[str, Any] = {
    "alert": {"labels": {"Hostname": "gpu-node-07", "gpu": "3", "xid": "79"}},
    "params": {"node": "gpu-node-07", "gpu": ""},
    "steps": {
        "check": {"status": "succeeded", "output": {"healthy": False, "lost_gpus": [3]}},
        "drain": {"status": "succeeded", "output": {}},
    },
}


def test_renders_nested_dicts_and_lists() -> None:
    """Every string at any depth is rendered; keys and non-strings are left alone."""
    value = {
        "node": "{{ params.node }}",
        "nested": {"gpu": "GPU {{ alert.labels.gpu }}", "count": 3, "flag": True},
        "list": ["{{ alert.labels.xid }}", "plain", None, 1.5],
        "{{ key }}": "kept",
    }
    assert render_value(value, CONTEXT) == {
        "node": "gpu-node-07",
        "nested": {"gpu": "GPU 3", "count": 3, "flag": True},
        "list": ["79", "plain", None, 1.5],
        "{{ key }}": "kept",
    }


def test_tuples_render_to_lists() -> None:
    """A tuple is rendered item by item and comes back as a list."""
    assert render_value(("{{ params.node }}", "x"), CONTEXT) == ["gpu-node-07", "x"]


def test_statement_blocks_render() -> None:
    """`{% ... %}` blocks are templates too, not only `{{ ... }}`."""
    text = "{% if steps.check.output.healthy %}ok{% else %}bad{% endif %}"
    assert render_value(text, CONTEXT) == "bad"


def test_render_does_not_escape_html() -> None:
    """Autoescape is off: Slack text and node names come out as written."""
    assert render_value("{{ v }}", {"v": "<a & b>"}) == "<a & b>"


@given(text=st.text().filter(lambda t: "{{" not in t and "{%" not in t))
def test_strings_without_template_markers_pass_through(text: str) -> None:
    """A string without `{{` or `{%` is returned as the same object, even with an empty context."""
    assert render_value(text, {}) is text


def test_missing_label_raises_template_error() -> None:
    """StrictUndefined: a label the alert does not carry is an error, not an empty string."""
    with pytest.raises(TemplateError, match="cannot render") as caught:
        render_value({"node": "{{ alert.labels.node }}"}, CONTEXT)
    assert "node" in str(caught.value)
    assert isinstance(caught.value, GpubotError)


def test_missing_top_level_name_raises_template_error() -> None:
    """A name not in the context at all is refused too."""
    with pytest.raises(TemplateError, match="'nothing' is undefined"):
        render_value("{{ nothing }}", {})


def test_undefined_with_default_filter_is_allowed() -> None:
    """An explicit `default` still works under StrictUndefined, for optional labels."""
    assert render_value("{{ alert.labels.node | default('?') }}", CONTEXT) == "?"
    assert render_value("{{ params.gpu or '?' }}", CONTEXT) == "?"


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os.system('touch /tmp/gpubot-pwned') }}",
        "{{ joiner.__init__.__globals__ }}",
        "{{ namespace.__init__.__globals__ }}",
        "{{ lipsum.__globals__ }}",
        "{{ params.__class__ }}",
        "{{ self.__dict__ }}",
    ],
)
def test_sandbox_blocks_attribute_escapes(source: str) -> None:
    """Dunder attribute chains cannot reach classes, globals or os: TemplateError instead."""
    with pytest.raises(TemplateError):
        render_value(source, CONTEXT)


def test_sandbox_escape_executes_nothing(tmp_path: Path) -> None:
    """An attempted `os.system` through globals leaves no trace on disk."""
    marker = tmp_path / "pwned"
    source = "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}"
    with pytest.raises(TemplateError):
        render_value(source, CONTEXT)
    assert not marker.exists()


@pytest.mark.parametrize(
    "source",
    [
        "{{ x.append(1) }}",
        "{{ x.extend([1, 2]) }}",
        "{{ x.pop() }}",
        "{{ x.clear() }}",
        "{{ d.update({'a': 2}) }}",
        "{{ d.pop('a') }}",
        "{{ d.setdefault('b', 1) }}",
    ],
)
def test_sandbox_blocks_mutation_of_values_passed_in(source: str) -> None:
    """Mutating methods on lists and dicts from the context raise, and nothing changes."""
    x = [7, 8]
    d = {"a": 1}
    with pytest.raises(TemplateError):
        render_value(source, {"x": x, "d": d})
    assert x == [7, 8]
    assert d == {"a": 1}


def test_read_only_methods_are_allowed() -> None:
    """Reading methods such as dict.get and str.upper still work in the sandbox."""
    assert render_value("{{ alert.labels.get('gpu') }}", CONTEXT) == "3"
    assert render_value("{{ params.node.upper() }}", CONTEXT) == "GPU-NODE-07"


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("steps.check.output.healthy", False),
        ("not steps.check.output.healthy", True),
        ("steps.check.output.lost_gpus | length > 0", True),
        ("3 in steps.check.output.lost_gpus", True),
        ("steps.drain.status == 'succeeded'", True),
        ("steps.check.status != 'succeeded'", False),
        ("alert.labels.xid == '79' and params.node == 'gpu-node-07'", True),
        ("params.gpu", False),
    ],
)
def test_evaluate_when_expressions(condition: str, expected: bool) -> None:
    """`when` expressions read step outputs, params and labels and give a real bool."""
    result = evaluate(condition, CONTEXT)
    assert result is expected


def test_evaluate_missing_step_raises_template_error() -> None:
    """A `when` naming a step with no result yet is an error, not silently false."""
    with pytest.raises(TemplateError, match="cannot evaluate when"):
        evaluate("steps.untaint.output.healthy", CONTEXT)
    with pytest.raises(TemplateError):
        evaluate("not steps.untaint", CONTEXT)


def test_evaluate_blocks_escapes_and_mutation() -> None:
    """The sandbox applies to `when` expressions as well."""
    x = [1]
    with pytest.raises(TemplateError):
        evaluate("''.__class__.__mro__", {})
    with pytest.raises(TemplateError):
        evaluate("x.append(2)", {"x": x})
    assert x == [1]


@pytest.mark.parametrize(
    "source", ["{{ params.node }}", "{% if a %}x{% endif %}", "plain", "{{ a | default('b') }}"]
)
def test_check_syntax_accepts_valid_templates(source: str) -> None:
    """A valid template has no syntax error, even if its names are not defined yet."""
    assert check_syntax(source) is None


@pytest.mark.parametrize(
    "source", ["{{ params.node ", "{% if a %}x", "{{ a | }}", "{% endfor %}", "{{ a b }}"]
)
def test_check_syntax_reports_broken_templates(source: str) -> None:
    """A broken template gives a non-empty message instead of raising."""
    message = check_syntax(source)
    assert isinstance(message, str)
    assert message


@pytest.mark.parametrize(
    ("source", "broken"),
    [("steps.check.output.healthy", False), ("not a.b", False), ("a ==", True), ("a )", True)],
)
def test_check_syntax_of_expressions(source: str, broken: bool) -> None:
    """With expression=True, `when` conditions are checked as expressions."""
    assert (check_syntax(source, expression=True) is not None) is broken


def test_statement_is_not_an_expression() -> None:
    """A `{% %}` block is a valid template but not a valid `when` expression."""
    assert check_syntax("{% if a %}x{% endif %}") is None
    assert check_syntax("{% if a %}x{% endif %}", expression=True) is not None


@pytest.mark.parametrize(
    ("kind", "source", "context"),
    [
        ("render", "{{ 1 / 0 }}", {}),
        ("render", "{{ 'gpu' + 1 }}", {}),
        ("render", "{{ range(10**6) | list }}", {}),
        (
            "when",
            "steps.check.output.lost_gpus > 0",
            {"steps": {"check": {"output": {"lost_gpus": None}}}},
        ),
        ("when", "x > 0", {"x": None}),
    ],
)
def test_runtime_errors_become_template_errors(
    kind: str, source: str, context: dict[str, Any]
) -> None:
    """A template that fails at run time for any reason should raise TemplateError.

    The executor only catches TemplateError and ValidationError around evaluate/render_value,
    so a ZeroDivisionError/TypeError/OverflowError here escapes the step instead of failing it.
    """
    run = render_value if kind == "render" else evaluate
    with pytest.raises(TemplateError):
        run(source, context)


@pytest.mark.parametrize(
    ("source", "expression", "reason"),
    [
        ("{{ node | bogus }}", False, "No filter named 'bogus'."),
        ("{% if a is bogus %}x{% endif %}", False, "No test named 'bogus'."),
        ("node | bogus", True, "No filter named 'bogus'."),
        ("a is bogus and b", True, "No test named 'bogus'."),
        ("a )", True, "unexpected ')'"),
    ],
)
def test_check_syntax_names_unknown_filters_and_tests(
    source: str, expression: bool, reason: str
) -> None:
    """An unknown filter or test is refused as Jinja's compiler would; every reason is the
    bare sentence, on one line."""
    assert check_syntax(source, expression=expression) == reason

"""What a runbook template reads: the dotted paths (`params.node`, `steps.check.output.hot`)."""

from __future__ import annotations

from jinja2 import Environment, nodes
from jinja2 import TemplateError as JinjaError

# Parsing only (nothing is rendered here), so a plain environment is enough.
_PARSER = Environment(autoescape=False)  # noqa: S701 -- parsed, never rendered

Path = tuple[str, ...]


def references(source: str, *, expression: bool = False) -> list[Path]:
    """Every path read from a top-level variable, longest form: `params.gpu or 0` gives
    ("params", "gpu"); `steps['check'].output.hot` gives ("steps", "check", "output", "hot").
    A name the template sets itself (`{% set %}`, a loop variable) is not a reference.
    Empty for a template that does not parse (the syntax check reports that)."""
    try:
        tree = _PARSER.parse("{{ (" + source + ") }}" if expression else source)
    except JinjaError:
        return []
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    found: list[Path] = []
    _walk(tree, found)
    return [p for p in found if p[0] not in local]


def _walk(node: nodes.Node, found: list[Path]) -> None:
    path = _path(node)
    if path is not None:
        found.append(path)
        for sub in _subscripts(node):
            _walk(sub, found)
        return
    for child in node.iter_child_nodes():
        _walk(child, found)


def _path(node: nodes.Node) -> Path | None:
    """`a.b['c'].d` as ("a", "b", "c", "d"); None unless it starts at a variable. A dynamic
    subscript (`a[b]`) ends the path before it."""
    if isinstance(node, nodes.Name) and node.ctx == "load":
        return (node.name,)
    if isinstance(node, nodes.Getattr):
        inner = _path(node.node)
        return (*inner, node.attr) if inner is not None else None
    if isinstance(node, nodes.Getitem):
        inner = _path(node.node)
        if inner is None:
            return None
        if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            return (*inner, node.arg.value)
        return inner
    return None


def _subscripts(node: nodes.Node) -> list[nodes.Node]:
    """The dynamic subscripts inside a path (`a[b.c]`): they read variables of their own."""
    out: list[nodes.Node] = []
    while isinstance(node, nodes.Getattr | nodes.Getitem):
        if isinstance(node, nodes.Getitem) and not isinstance(node.arg, nodes.Const):
            out.append(node.arg)
        node = node.node
    return out

"""`gpubot actions [list|show NAME] [--json|--markdown]`: the action reference, from the registry.

The docs' actions reference (docs/reference/actions.md) ends with this module's `--markdown`
output (`python scripts/docs_reference.py` rewrites it; a test keeps them equal).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpubot.actions.base import ActionSpec
    from gpubot.engine.registry import Registry

_CONSTRAINTS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "length >= {}"),
    ("maxLength", "length <= {}"),
    ("minItems", "items >= {}"),
    ("maxItems", "items <= {}"),
    ("pattern", "matches `{}`"),
)


def add_parser(sub: Any, config_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "actions",
        help="the actions runbook steps can use: args, outputs, approval",
        description="List the actions of the registry, or show one: its args (name, type, "
        "default, constraints), its outputs (what `steps.<id>.output.<key>` can read), "
        "whether it changes the cluster, and the approval it needs. `--markdown` prints the "
        "docs' actions reference (docs/reference/actions.md).",
    )
    config_arg(p)
    p.add_argument("verb", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?", metavar="NAME", help="the action to show")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--markdown", action="store_true", help="print the Markdown reference")


@dataclass(frozen=True)
class Arg:
    name: str
    type: str
    required: bool
    default: Any
    constraints: tuple[str, ...]
    description: str

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "default": self.default,
            "constraints": list(self.constraints),
            "description": self.description,
        }


def args_of(spec: ActionSpec[Any]) -> list[Arg]:
    """The params model's fields, from its JSON schema (types, defaults, constraints)."""
    schema = spec.params.model_json_schema()
    required = set(schema.get("required", []))
    defs = schema.get("$defs", {})
    out = []
    for name, prop in schema.get("properties", {}).items():
        out.append(
            Arg(
                name=name,
                type=_type(prop, defs),
                required=name in required,
                default=prop.get("default"),
                constraints=tuple(_constraints(prop)),
                description=str(prop.get("description", "")),
            )
        )
    return out


def approval_of(spec: ActionSpec[Any]) -> str:
    if not spec.mutating:
        return "auto"
    if spec.auto_allowed:
        return "auto allowed (reversible)"
    return "required or two-person (never auto)"


def action_json(spec: ActionSpec[Any]) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "mutating": spec.mutating,
        "approval": approval_of(spec),
        "auto_allowed": spec.auto_allowed or not spec.mutating,
        "blast_radius": spec.blast,
        "args": [a.as_json() for a in args_of(spec)],
        "outputs": dict(spec.outputs) if spec.outputs is not None else None,
    }


def markdown(registry: Registry) -> str:
    """The reference: a summary table, then each action's args and outputs."""
    lines = [
        "| action | mutating | approval | what it does |",
        "|---|---|---|---|",
    ]
    for spec in registry.specs():
        blast = f" Counts against the {spec.blast} cap." if spec.blast else ""
        lines.append(
            f"| [`{spec.name}`](#action-{_anchor(spec.name)}) | "
            f"{'yes' if spec.mutating else 'no'} | {approval_of(spec)} | "
            f"{_cell(spec.description)}{blast} |"
        )
    for spec in registry.specs():
        lines += ["", f'<a id="action-{_anchor(spec.name)}"></a>', f"#### `{spec.name}`", ""]
        lines.append(_cell(spec.description))
        lines.append("")
        args = args_of(spec)
        if args:
            lines += ["| arg | type | default | constraints |", "|---|---|---|---|"]
            for a in args:
                default = "required" if a.required else f"`{json.dumps(a.default)}`"
                rules = ", ".join(a.constraints) or "-"
                name = f"`{a.name}`" + (f": {_cell(a.description)}" if a.description else "")
                lines.append(f"| {name} | {_cell(a.type)} | {default} | {_cell(rules)} |")
        else:
            lines.append("No args.")
        lines.append("")
        if spec.outputs is None:
            lines.append("Outputs: not declared (validation does not check what is read).")
        elif not spec.outputs:
            lines.append("Outputs: none.")
        else:
            lines.append("Outputs: " + "; ".join(f"`{k}` ({v})" for k, v in spec.outputs.items()))
    return "\n".join(lines) + "\n"


def show_lines(spec: ActionSpec[Any]) -> list[str]:
    lines = [spec.name, f"  {spec.description}"]
    lines.append(f"  mutating: {'yes' if spec.mutating else 'no'}; approval: {approval_of(spec)}")
    if spec.blast:
        lines.append(f"  blast radius: counts against the {spec.blast} cap")
    lines.append("  args:")
    for a in args_of(spec):
        default = "required" if a.required else f"default {json.dumps(a.default)}"
        rules = f"; {', '.join(a.constraints)}" if a.constraints else ""
        lines.append(f"    {a.name}: {a.type} ({default}{rules})")
    if spec.outputs is None:
        lines.append("  outputs: not declared")
    else:
        lines.append("  outputs:")
        lines += [f"    {k}: {v}" for k, v in spec.outputs.items()]
    return lines


def run_actions(args: argparse.Namespace, registry: Registry) -> int:
    from gpubot.errors import InputError

    if args.markdown:
        print(markdown(registry), end="")
        return 0
    if args.verb == "show":
        if not args.name:
            raise InputError("actions show: which action? (gpubot actions lists them)")
        spec = registry.get(args.name)  # RunbookError (one line, exit 2) when unknown
        print(json.dumps(action_json(spec), indent=2) if args.json else "\n".join(show_lines(spec)))
        return 0
    specs = registry.specs()
    if args.json:
        print(json.dumps([action_json(s) for s in specs], indent=2))
        return 0
    width = max(len(s.name) for s in specs)
    for s in specs:
        flag = "mutating" if s.mutating else "read-only"
        print(f"{s.name:<{width}}  {flag:<9}  {s.description}")
    return 0


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        return _type(defs.get(prop["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "enum" in prop:
        return " | ".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(_type(p, defs) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}), defs)}"
    return str(kind)


def _constraints(prop: dict[str, Any]) -> list[str]:
    found = [fmt.format(prop[key]) for key, fmt in _CONSTRAINTS if key in prop]
    for option in prop.get("anyOf", []):
        found += _constraints(option)
    return found


def _anchor(name: str) -> str:
    return name.replace(".", "-").replace("_", "-")


def _cell(text: str) -> str:
    """One table cell for the docs site (Python-Markdown): a pipe in running text is escaped;
    inside a code span it is not a column break there, and an escape would show."""
    parts = text.replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))

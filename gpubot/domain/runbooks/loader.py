"""Load runbook YAML files; every error names the file, the line and the field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gpubot.domain.runbooks.spec import Runbook
from gpubot.errors import RunbookError


@dataclass(frozen=True)
class LoadedRunbook:
    runbook: Runbook
    path: Path
    root: yaml.Node | None = None

    def line(self, loc: Sequence[int | str]) -> int:
        """The 1-based line of a field, for error messages."""
        return _node_at(self.root, loc).start_mark.line + 1 if self.root is not None else 1


def _node_at(root: yaml.Node, loc: Sequence[int | str]) -> yaml.Node:
    """The deepest YAML node along a pydantic error location (for its line number)."""
    node = root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if found is None:
                # An unknown field: point at the key itself.
                key = next((k for k, _ in node.value if getattr(k, "value", None) == part), None)
                return key if key is not None else node
            node = found
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
        else:
            break
    return node


def _field(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(runbook)"


# libyaml's parser when PyYAML was built with it: the pure-Python one takes most of
# `runbooks validate`'s time. A document with an error is read again by the pure-Python
# parser, so the reason keeps its wording ("mapping values are not allowed here").
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose_and_construct(text: str, loader_class: Any) -> tuple[Any, Any]:
    """The document's node tree (for line numbers) and its value, from one parse."""
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()


def _read_yaml(text: str) -> tuple[Any, Any]:
    try:
        return _compose_and_construct(text, _FAST_LOADER)
    except yaml.YAMLError:
        if _FAST_LOADER is yaml.SafeLoader:
            raise
    return _compose_and_construct(text, yaml.SafeLoader)


def parse_runbook(text: str, *, path: Path) -> LoadedRunbook:
    """Parse one runbook document; raise RunbookError naming file, line and field."""
    try:
        root, data = _read_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"{mark.line + 1}" if mark is not None else "?"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RunbookError(f"{path}:{line}: invalid YAML: {problem}") from exc
    if root is None or not isinstance(data, dict):
        raise RunbookError(f"{path}:1: (runbook): expected a mapping with name, triggers, steps")
    try:
        return LoadedRunbook(Runbook.model_validate(data), path, root)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        node = _node_at(root, loc)
        msg = err["msg"].removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise RunbookError(
            f"{path}:{node.start_mark.line + 1}: {_field(loc)}: {msg}{more}"
        ) from exc


def load_file(path: Path) -> LoadedRunbook:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunbookError(f"{path}: cannot read: {exc.strerror}") from exc
    return parse_runbook(text, path=path)


def runbook_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise RunbookError(f"{directory}: not a directory of runbooks")
    return sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])


def load_dirs(directories: Iterable[Path]) -> list[LoadedRunbook]:
    """Load every runbook in the directories; a name may be defined only once."""
    loaded: list[LoadedRunbook] = []
    seen: dict[str, Path] = {}
    for directory in directories:
        for path in runbook_files(directory):
            item = load_file(path)
            name = item.runbook.name
            if name in seen:
                line = item.line(("name",))
                raise RunbookError(
                    f"{path}:{line}: name: runbook {name!r} is also defined in {seen[name]}"
                )
            seen[name] = path
            loaded.append(item)
    return loaded

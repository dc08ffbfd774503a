"""`gpubot runbooks validate [PATH ...]`: what `serve` would refuse at start-up, before it does.

The checks are engine/validation.validate with the config's policy and registry, the very
function `serve` runs on its runbooks (rules.load_runbooks), so the two cannot disagree.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from gpubot.config import Settings
from gpubot.domain.runbooks.loader import LoadedRunbook, load_file, runbook_files
from gpubot.engine.registry import builtin_registry
from gpubot.engine.runbook_policy_checks import validate
from gpubot.errors import InputError, RunbookError
from gpubot.loaded_rules import build_policy, build_reclaim, runbook_dirs


def configured_files(settings: Settings) -> list[Path]:
    """The runbook files `serve` loads: the shipped ones (unless turned off) and runbooks.dirs."""
    return [f for d in runbook_dirs(settings) for f in runbook_files(d)]


def given_files(paths: Sequence[Path]) -> list[Path]:
    """Files as given, directories as their *.yaml/*.yml; InputError for anything else."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = runbook_files(path)
            if not found:
                raise InputError(f"{path}: no runbook files (*.yaml, *.yml)")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such runbook file or directory")
    return files


def problems_in(files: Sequence[Path], settings: Settings) -> tuple[list[LoadedRunbook], list[str]]:
    """Every problem of every file, one line each (`file:line: field: reason`)."""
    registry = builtin_registry(reclaim=build_reclaim(settings))
    policy = build_policy(settings)
    loaded: list[LoadedRunbook] = []
    problems: list[str] = []
    for path in files:
        try:
            item = load_file(path)
        except RunbookError as exc:
            problems.append(str(exc))
            continue
        loaded.append(item)
        problems.extend(validate(item, registry=registry, policy=policy))
    seen: dict[str, Path] = {}
    for item in loaded:
        name = item.runbook.name
        if name in seen:
            line = item.line(("name",))
            problems.append(
                f"{item.path}:{line}: name: runbook {name!r} is also defined in {seen[name]}"
            )
        seen.setdefault(name, item.path)
    return loaded, problems


def run_validate(args: argparse.Namespace, settings: Settings) -> int:
    files = given_files(args.paths) if args.paths else configured_files(settings)
    loaded, problems = problems_in(files, settings)
    if problems:
        print("\n".join(f"gpubot: error: {p}" for p in problems), file=sys.stderr)
        return 1
    for item in loaded:
        print(f"ok  {item.runbook.name:<20} {item.path}")
    return 0

"""`gpubot plan --runbook NAME --param KEY=VALUE …`: a command runbook's plan, stored nowhere."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from gpubot.config import Settings, StoreSettings
from gpubot.errors import InputError


def parse_params(items: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` pairs (the value may hold `=`); InputError for anything else."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--param {item!r}: expected KEY=VALUE")
        if key in out:
            raise InputError(f"--param {key}: given twice")
        out[key] = value
    return out


async def run_plan(args: argparse.Namespace, settings: Settings) -> int:
    """Print the plan (live state read, nothing changed or stored); 1 when it lists problems."""
    from gpubot.backends.console import render
    from gpubot.domain.messages import plan_message
    from gpubot.wiring import build_app

    params = parse_params(args.param or [])
    cluster = args.cluster or settings.clusters[0].name
    # A plan stores nothing: an in-memory database, not the configured one.
    app = build_app(settings.model_copy(update={"store": StoreSettings(url="sqlite://")}))
    try:
        plan = await app.service.plan(runbook=args.runbook, args=params, cluster=cluster)
    finally:
        await app.aclose()
    if args.json:
        print(json.dumps(plan.as_json(), indent=2))
    else:
        print("\n".join(render(plan_message(plan))))
    return 1 if plan.problems else 0

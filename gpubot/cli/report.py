"""`gpubot report idle`: the idle-GPU report on demand, as text, JSON or a PNG chart."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpubot.errors import InputError


def add_parser(sub: Any, config_arg: Any) -> None:
    p = sub.add_parser("report", help="reports: idle GPUs")
    rsub = p.add_subparsers(dest="report_command", required=True, metavar="SUBCOMMAND")
    r = rsub.add_parser(
        "idle",
        help="idle GPU allocations with their cost (the scheduled report, now)",
        description="Lists pods whose GPUs averaged below reports.idle.threshold_pct over "
        "reports.idle.window, with hours idle and cost from reports.idle.prices, totals by "
        "namespace and the fleet's average utilisation. Reads Prometheus (three queries) and "
        "the pod list; changes nothing. Exits 1 when Prometheus cannot be read.",
    )
    config_arg(r)
    r.add_argument("--json", action="store_true", help="print every figure as JSON")
    r.add_argument(
        "--png", type=Path, metavar="FILE", help="also write the chart to FILE (says where)"
    )
    r.add_argument("--namespace", metavar="NS", help="only this namespace")
    r.add_argument("--cluster", metavar="NAME", help="only this cluster (default: all)")


async def run_report(app: Any, args: argparse.Namespace) -> int:
    from gpubot.backends.console import render
    from gpubot.reports.idle_text import report_json, report_message

    reporter = app.reports
    if args.png is not None and not args.png.parent.is_dir():
        raise InputError(f"--png: no such directory: {args.png.parent}")
    names = reporter.cluster_names(args.cluster)
    if args.png is not None and len(names) > 1:
        raise InputError("--png draws one cluster: name it with --cluster")
    collected = [await reporter.build(cluster=n, namespace=args.namespace) for n in names]
    reports = [c.report for c in collected]
    if args.json:
        body: Any = [report_json(r) for r in reports]
        print(json.dumps(body[0] if len(body) == 1 else body, indent=2))
    else:
        for report in reports:
            print("\n".join(render(report_message(report, top=reporter.settings.top))))
    failed = [r for r in reports if r.error is not None]
    if args.png is not None and not failed:
        import asyncio

        from gpubot.reports.chart import render_chart

        png = await asyncio.to_thread(render_chart, reports[0])
        try:
            args.png.write_bytes(png)
        except OSError as exc:
            raise InputError(f"--png: cannot write {args.png}: {exc.strerror}") from exc
        # Where it went; on stderr under --json, whose stdout is one JSON document.
        where = sys.stderr if args.json else sys.stdout
        print(f"chart written to {args.png} ({len(png):,} bytes)", file=where)
    if failed:
        print(f"gpubot: error: {failed[0].cluster}: {failed[0].error}", file=sys.stderr)
        return 1
    return 0

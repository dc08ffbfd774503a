"""The idle-GPU report as a neutral message (Slack, terminal) and as JSON."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gpubot.domain.results import Fields, Message, Table, Text
from gpubot.reports.idle import IdleReport


def _hours(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:g} h" if hours >= 1 else f"{delta.total_seconds() / 60:g} min"


def _usd(value: float) -> str:
    return f"${value:,.0f}" if value >= 100 else f"${value:,.2f}"


def report_message(report: IdleReport, *, top: int) -> Message:
    """Title with the headline; fleet figures; the top idle allocations; namespace totals."""
    scope = f" in {report.namespace}" if report.namespace else ""
    if report.error is not None:
        return Message(
            f"Idle GPUs on {report.cluster}{scope}: report unavailable",
            (Text(report.error),),
        )
    title = (
        f"Idle GPUs on {report.cluster}{scope}: {report.idle_gpus} allocated GPUs idle, "
        f"{_usd(report.idle_cost_usd)} over the last {_hours(report.lookback)}"
    )
    util = "-" if report.fleet_util_pct is None else f"{report.fleet_util_pct:.1f} %"
    blocks: list[Any] = [
        Fields(
            (
                ("Fleet utilisation", f"{util} average over {_hours(report.window)}"),
                ("GPUs", f"{report.allocated_gpus} allocated of {report.fleet_gpus}"),
                ("Idle", f"below {report.threshold_pct:g} % over {_hours(report.window)}"),
                (
                    "Reclaimed",
                    f"{report.saved_gpu_hours:.1f} GPU-hours saved ({_usd(report.saved_usd)})",
                ),
            )
        )
    ]
    if not report.idle:
        blocks.append(Text("No idle GPU allocations."))
    else:
        rows = tuple(
            (
                a.ref,
                a.owner,
                a.node,
                str(len(a.gpus)),
                a.model or "-",
                f"{a.util_pct:.1f}",
                f"{a.memory_used_mib / 1024:.1f}",
                f"{a.idle_hours:.1f}",
                _usd(a.cost_usd),
            )
            for a in report.idle[:top]
        )
        blocks.append(
            Table(
                ("pod", "owner", "node", "GPUs", "model", "util %", "mem GiB", "idle h", "cost"),
                rows,
            )
        )
        if len(report.idle) > top:
            blocks.append(Text(f"… and {len(report.idle) - top} more idle allocations."))
        blocks.append(
            Table(
                ("namespace", "team", "idle GPUs", "GPU-hours", "cost"),
                tuple(
                    (t.namespace, t.team, str(t.gpus), f"{t.idle_gpu_hours:.1f}", _usd(t.cost_usd))
                    for t in report.namespaces
                ),
            )
        )
    for r in report.reclaimed:
        blocks.append(
            Text(
                f"Reclaimed {r.namespace}/{r.workload} ({r.gpus} GPUs) at "
                f"{r.reclaimed_at:%Y-%m-%d %H:%M} UTC: {r.saved_gpu_hours:.1f} GPU-hours saved."
            )
        )
    return Message(title, tuple(blocks))


def report_json(report: IdleReport) -> dict[str, Any]:
    """Every figure of the report, for `gpubot report idle --json`."""
    return {
        "cluster": report.cluster,
        "namespace": report.namespace,
        "generated_at": report.generated_at.isoformat(),
        "window_seconds": report.window.total_seconds(),
        "lookback_seconds": report.lookback.total_seconds(),
        "threshold_pct": report.threshold_pct,
        "error": report.error,
        "queries": report.queries,
        "fleet": {
            "gpus": report.fleet_gpus,
            "allocated_gpus": report.allocated_gpus,
            "avg_util_pct": report.fleet_util_pct,
        },
        "idle_gpus": report.idle_gpus,
        "idle_cost_usd": round(report.idle_cost_usd, 2),
        "idle": [
            {
                "namespace": a.namespace,
                "pod": a.pod,
                "owner": a.owner,
                "team": a.team,
                "node": a.node,
                "gpus": list(a.gpus),
                "model": a.model,
                "util_pct": round(a.util_pct, 2),
                "memory_used_mib": a.memory_used_mib,
                "idle_hours": round(a.idle_hours, 2),
                "idle_gpu_hours": round(a.idle_gpu_hours, 2),
                "cost_usd": round(a.cost_usd, 2),
            }
            for a in report.idle
        ],
        "namespaces": [
            {
                "namespace": t.namespace,
                "team": t.team,
                "idle_gpus": t.gpus,
                "idle_gpu_hours": round(t.idle_gpu_hours, 2),
                "cost_usd": round(t.cost_usd, 2),
            }
            for t in report.namespaces
        ],
        "reclaimed": [
            {
                "namespace": r.namespace,
                "workload": r.workload,
                "gpus": r.gpus,
                "model": r.model,
                "reclaimed_at": r.reclaimed_at.isoformat(),
                "saved_gpu_hours": round(r.saved_gpu_hours, 2),
                "saved_usd": round(r.saved_usd, 2),
            }
            for r in report.reclaimed
        ],
        "saved_gpu_hours": round(report.saved_gpu_hours, 2),
    }

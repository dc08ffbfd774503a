"""The idle report's PNG: idle cost by allocation, and a utilisation heatmap of the fleet.

matplotlib is imported here only, when a chart is drawn (it costs ~0.3 s to import), and
draws through the Agg canvas on a private Figure: no pyplot, no global state, thread-safe.
"""

from __future__ import annotations

import io

from gpubot.knowledge.outside_numbers import natural_key
from gpubot.reports.idle import IdleAllocation, IdleReport

_MAX_BARS = 15
_MAX_NODES = 40


def _bar_label(a: IdleAllocation) -> str:
    """`namespace/workload (N x model)`: the workload a person would scale, not the pod."""
    short = a.model.replace("NVIDIA ", "").split(" ")[0] if a.model else "GPU"
    kind, _, name = a.owner.partition("/")
    who = name if kind not in ("Pod", "?", "") and name else a.pod
    text = f"{a.namespace}/{who} ({len(a.gpus)} x {short})"
    return text if len(text) <= 56 else text[:55] + "…"


def _mean(cells: tuple[tuple[str, float | None], ...]) -> float:
    """A node's mean utilisation over its allocated GPUs; a node with none sorts last."""
    used = [u for _, u in cells if u is not None]
    return sum(used) / len(used) if used else 1000.0


def render_chart(report: IdleReport) -> bytes:
    """A PNG (about 1400 by 700 px) a person can read in Slack."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 7), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    cost_ax, heat_ax = fig.subplots(1, 2, width_ratios=(1.2, 1))
    scope = f" ({report.namespace})" if report.namespace else ""
    fig.suptitle(
        f"Idle GPUs on {report.cluster}{scope} — {report.generated_at:%Y-%m-%d %H:%M} UTC",
        fontsize=14,
    )

    top = report.idle[:_MAX_BARS]
    if top:
        labels = [_bar_label(a) for a in reversed(top)]
        costs = [a.cost_usd for a in reversed(top)]
        bars = cost_ax.barh(labels, costs, color="#d62728")
        cost_ax.bar_label(bars, labels=[f"${c:,.0f}" for c in costs], padding=3, fontsize=8)
        cost_ax.margins(x=0.15)
        lookback_h = report.lookback.total_seconds() / 3600
        cost_ax.set_xlabel(f"idle cost over the last {lookback_h:g} h (USD)")
        cost_ax.tick_params(axis="y", labelsize=8)
    else:
        cost_ax.text(0.5, 0.5, "No idle GPU allocations", ha="center", va="center", fontsize=13)
        cost_ax.set_axis_off()
    total = f"${report.idle_cost_usd:,.0f}"
    cost_ax.set_title(f"Top idle allocations: {report.idle_gpus} GPUs, {total}")

    # The least-used nodes first: they are where idle GPUs are.
    rows = sorted(report.node_util, key=lambda n: _mean(n[1]))[:_MAX_NODES]
    if rows:
        import numpy as np
        from matplotlib import colormaps

        columns = sorted({g for _, cells in rows for g, _ in cells}, key=_gpu_order)
        grid = [[dict(cells).get(g) for g in columns] for _, cells in rows]
        values = np.ma.masked_invalid(np.array(grid, dtype=float))  # None: not allocated
        cmap = colormaps["RdYlGn"].with_extremes(bad="#d9d9d9")
        image = heat_ax.imshow(values, aspect="auto", cmap=cmap, vmin=0, vmax=100)
        heat_ax.set_xticks(range(len(columns)), labels=columns)
        heat_ax.set_yticks(range(len(rows)), labels=[n for n, _ in rows], fontsize=7)
        heat_ax.set_xlabel("GPU (grey: not allocated)")
        fig.colorbar(image, ax=heat_ax, label="utilisation %")
        shown = f"{len(rows)} least-used nodes" if len(report.node_util) > len(rows) else "nodes"
        window_h = report.window.total_seconds() / 3600
        util = report.fleet_util_pct or 0.0
        heat_ax.set_title(f"Utilisation over {window_h:g} h ({shown}; fleet {util:.0f} %)")
    else:
        heat_ax.set_axis_off()

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _gpu_order(text: str) -> tuple[int, str]:
    return natural_key(text)

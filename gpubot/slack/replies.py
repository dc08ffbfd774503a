"""What `/gpu` answers, as neutral messages built from cluster and store data (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from gpubot.domain.control.pools import MODE_MEANS, PoolChoice
from gpubot.domain.control.safety_caps import BlastRadius, Policy
from gpubot.domain.fleet.cluster import GpuState, NodeInfo
from gpubot.domain.incidents.correlation import Incident
from gpubot.domain.results import Fields, Message, Table, Text
from gpubot.domain.runbooks.runs import Run, StepState
from gpubot.knowledge.xid.catalog import XidInfo


def _xid(gpus: Sequence[GpuState]) -> str:
    codes = sorted({x for g in gpus for x in g.xid_errors})
    lost = sum(1 for g in gpus if g.lost)
    text = ",".join(str(c) for c in codes) or "-"
    return f"{text} ({lost} lost)" if lost else text


def fleet_status(cluster: str, nodes: Sequence[tuple[NodeInfo, Sequence[GpuState]]]) -> Message:
    rows = []
    for node, gpus in nodes:
        model = gpus[0].name if gpus else node.gpu_product or "-"
        temp = max((g.temperature_c for g in gpus), default=0)
        power = sum(g.power_draw_w for g in gpus)
        limit = sum(g.power_limit_w for g in gpus)
        util = sum(g.utilization_pct for g in gpus) / len(gpus) if gpus else 0.0
        used = sum(g.memory_used_mib for g in gpus) // 1024
        total = sum(g.memory_total_mib for g in gpus) // 1024
        rows.append(
            (
                node.name,
                f"{len(gpus)}x {model}",
                f"{temp}C",
                f"{power:.0f}/{limit:.0f}W",
                f"{util:.0f}%",
                f"{used}/{total}GiB",
                _xid(gpus),
                "yes" if node.unschedulable else "no",
            )
        )
    unhealthy = sum(1 for _, gpus in nodes for g in gpus if not g.healthy)
    return Message(
        f"Cluster {cluster}: {len(nodes)} GPU nodes, {unhealthy} unhealthy GPUs",
        (
            Table(
                ("node", "gpus", "max temp", "power/limit", "util", "memory", "xid", "cordoned"),
                tuple(rows),
            ),
        ),
    )


def node_policy(
    cluster: str, node: str, choice: PoolChoice, *, digest: str, policy: Policy | None = None
) -> Message:
    """`/gpu policy node=…`: the node's pool, its mode and what it means, and why; with
    `policy`, what applies to it: the caps (the fleet's and the pool's own), its escalation,
    diagnostics level and whether evidence is required."""
    fields = [
        ("Pool", choice.pool.name),
        ("Mode", choice.pool.mode),
        ("Why", choice.why),
    ]
    if policy is not None:
        name = choice.pool.name
        caps = f"fleet: {_cap(policy.blast)}"
        if (own := policy.pool_blast.get(name)) is not None:
            caps += f"; pool {name}: {_cap(own)}"
        e = policy.escalation_of(name)
        whose = f"pool {name}" if name in policy.pool_escalation else "global"
        level = policy.pool_diag_level.get(name)
        fields += [
            ("Blast radius", caps),
            (
                "Escalation",
                f"{whose}: {e.max_resets} reset(s) before a reboot, {e.max_reboots} "
                "reboot(s) before service",
            ),
            (
                "Diagnostics",
                f"level {level} (pool {name})" if level is not None else "policy.diag_level",
            ),
            (
                "Evidence",
                "required before anything destructive"
                if choice.pool.evidence_required
                else "not required (a failed gathering is said; the run goes on)",
            ),
        ]
    fields.append(("Policy digest", digest or "-"))
    return Message(
        f"Policy of {node} ({cluster})",
        (Fields(tuple(fields)), Text(MODE_MEANS[choice.pool.mode])),
    )


def _cap(b: BlastRadius) -> str:
    return (
        f"{b.max_cordoned_count} nodes or {b.max_cordoned_fraction:.0%} cordoned, "
        f"{b.max_concurrent_drains} drain(s) at a time"
    )


def node_status(cluster: str, node: NodeInfo, gpus: Sequence[GpuState]) -> Message:
    rows = tuple(
        (
            str(g.index),
            g.name,
            f"{g.temperature_c}C",
            f"{g.power_draw_w:.0f}/{g.power_limit_w:.0f}W",
            f"{g.utilization_pct}%",
            f"{g.memory_used_mib // 1024}/{g.memory_total_mib // 1024}GiB",
            _xid([g]),
        )
        for g in gpus
    )
    return Message(
        f"{node.name} ({cluster}): cordoned {'yes' if node.unschedulable else 'no'}, "
        f"taints {', '.join(str(t) for t in node.taints) or 'none'}",
        (Table(("gpu", "model", "temp", "power/limit", "util", "memory", "xid"), rows),),
    )


def incident_list(incidents: Sequence[Incident], which: str) -> Message:
    rows = tuple(
        (
            i.id,
            i.status.value,
            i.severity,
            i.alertname,
            i.cluster,
            i.node or "-",
            i.created_at.strftime("%m-%d %H:%M"),
        )
        for i in incidents
    )
    # "all" filters nothing, so it is no word of the sentence: "No incidents", "3 incidents".
    kind = "" if which == "all" else f"{which} "
    if not rows:
        return Message(f"No {kind}incidents")
    return Message(
        f"{len(rows)} {kind}incident{'' if len(rows) == 1 else 's'}",
        (Table(("id", "status", "severity", "alert", "cluster", "node", "opened"), rows),),
    )


def incident_detail(incident: Incident, runs: Sequence[tuple[Run, Sequence[StepState]]]) -> Message:
    blocks: list[Text | Fields | Table] = [
        Text(incident.summary),
        Fields(
            (
                ("Status", incident.status.value),
                ("Severity", incident.severity),
                ("Cluster", incident.cluster),
                ("Node", incident.node or "-"),
                ("GPU", incident.labels.get("gpu", "-")),
                ("Opened", incident.created_at.strftime("%Y-%m-%d %H:%M:%S UTC")),
            )
        ),
    ]
    for run, steps in runs:
        blocks.append(Text(f"Run {run.id} ({run.runbook}): {run.status.value} {run.note}"))
        blocks.append(
            Table(
                ("step", "status", "error"),
                tuple((s.step_id, s.status.value, s.error or "-") for s in steps),
            )
        )
    return Message(f"{incident.id}: {incident.alertname}", tuple(blocks))


def xid_reply(code: int, info: XidInfo | None, catalog_url: str) -> Message:
    if info is None:
        return Message(f"XID {code} is not in NVIDIA's XID catalog", (Text(catalog_url),))
    pairs = [("Name", info.name), ("NVIDIA's action", info.action or "none published")]
    if info.runbook:
        pairs.append(("gpubot runbook", info.runbook))
    return Message(
        f"XID {code}: {info.name}",
        (Text(info.description), Fields(tuple(pairs)), Text(catalog_url)),
    )

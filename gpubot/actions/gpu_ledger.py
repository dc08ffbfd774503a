"""GPU history steps: record an XID in the ledger and decide the escalation from the GPU's
history (`gpu.history`); the helper other steps use to record what they did to a GPU."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    Output,
    Params,
    PlanNote,
    nothing_to_check,
)
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.gpus.escalation import Escalation, decide
from gpubot.domain.gpus.ledger import (
    GpuEvent,
    open_service_mark,
    recent_lines,
    summary,
)
from gpubot.domain.incidents.gpu_labels import BusIdHint, GpuIndexHint, UuidHint
from gpubot.domain.k8s_names import NodeName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import GpubotError
from gpubot.knowledge.outside_numbers import is_gpu_uuid

log = logging.getLogger(__name__)


class HistoryParams(Params):
    node: NodeName
    xid: int = Field(ge=0, le=65535)
    # The index and UUID the alert names (DCGM's gpu and UUID labels): only hints; the GPU
    # recorded is the one the node agent reports.
    gpu: GpuIndexHint = None
    uuid: UuidHint = ""
    pci_bus_id: BusIdHint = ""
    remedy: Literal["reset", "route"] = "reset"
    record: bool = True  # append the XID to the ledger (run only; a plan records nothing)
    recent: int = Field(5, ge=0, le=20)


@dataclass(frozen=True)
class Identified:
    """The GPU an XID is about, as the node agent reports it."""

    uuid: str
    index: int | None
    pci_bus_id: str
    note: str = ""


async def identify(ctx: ActionContext, p: HistoryParams) -> Identified | None:
    """The GPU from the agent's list: by the alert's UUID when the agent lists it on this
    node, else by index (a UUID the agent reports there wins over the label's). A label UUID
    is used alone only when the agent lists the index without a UUID (a GPU too lost to
    name itself). None when the GPU cannot be named."""
    gpus = await ctx.cluster.agent.gpus(node=p.node)
    label_bus = p.pci_bus_id  # normalised above ("" when the label is not a bus id)
    if p.uuid:
        for g in gpus:
            if g.uuid == p.uuid:
                return Identified(g.uuid, g.index, g.pci_bus_id or label_bus)
    at_index = next((g for g in gpus if p.gpu is not None and g.index == p.gpu), None)
    if at_index is None:
        return None
    bus = at_index.pci_bus_id or label_bus
    if at_index.uuid and is_gpu_uuid(at_index.uuid):
        note = f"the alert's UUID {p.uuid} is not on {p.node}" if p.uuid else ""
        return Identified(at_index.uuid, at_index.index, bus, note)
    if p.uuid:
        return Identified(p.uuid, at_index.index, bus, "UUID from the alert")
    return None


async def _history(ctx: ActionContext, p: HistoryParams, *, record: bool) -> Output:
    unread = ""
    try:
        gpu = await identify(ctx, p)
    except GpubotError as exc:  # no agent, or a node it does not know: no history to go by
        gpu, unread = None, f"; the node agent could not be read: {str(exc)[:200]}"
    history: list[GpuEvent] = []
    if gpu is not None and ctx.ledger is not None:
        history = await ctx.ledger.gpu_history(uuid=gpu.uuid)
    now = ctx.clock.now()
    if gpu is None:
        escalation = Escalation(
            "reset" if p.remedy == "reset" else "check_application",
            f"the GPU could not be identified on {p.node} (index "
            f"{p.gpu if p.gpu is not None else 'unknown'}): no history to go by{unread}",
        )
    else:
        escalation = decide(
            history,
            xid=p.xid,
            remedy=p.remedy,
            policy=ctx.escalation,
            now=now,
            incident_id=ctx.incident_id,
        )
    recorded = False
    if record and gpu is not None and ctx.ledger is not None and not ctx.dry_run:
        # A step run again after a restart finds its XID already there.
        seen = any(
            e.kind == "xid" and e.xid == p.xid and e.incident_id == ctx.incident_id
            for e in history
            if ctx.incident_id is not None
        )
        if not seen:
            await ctx.ledger.record_gpu_event(
                uuid=gpu.uuid,
                node=p.node,
                kind="xid",
                at=now,
                pci_bus_id=gpu.pci_bus_id,
                gpu_index=gpu.index,
                xid=p.xid,
                incident_id=ctx.incident_id,
                run_id=ctx.run_id,
                detail=gpu.note,
                actor=ctx.actor,
            )
            recorded = True
    earlier = [e for e in history if ctx.incident_id is None or e.incident_id != ctx.incident_id]
    return {
        "node": p.node,
        "gpu": gpu.index if gpu else p.gpu,
        "uuid": gpu.uuid if gpu else "",
        "pci_bus_id": gpu.pci_bus_id if gpu else "",
        "identified": gpu is not None,
        "escalation": escalation.decision,
        "reason": escalation.reason,
        "marked": open_service_mark(history) is not None,
        "recent": recent_lines(earlier, limit=p.recent),
        "summary": summary(earlier, limit=p.recent),
        "recorded": recorded,
    }


async def plan_history(ctx: ActionContext, p: HistoryParams) -> PlanNote:
    out = await _history(ctx, p, record=False)
    who = out["uuid"] or f"GPU {p.gpu if p.gpu is not None else '?'}"
    return PlanNote(
        f"read the history of {who} on {p.node} and record XID {p.xid} (now: "
        f"{out['escalation']}: {out['reason']})",
        changes=False,
        facts=out,
    )


async def run_history(ctx: ActionContext, p: HistoryParams) -> Output:
    return await _history(ctx, p, record=p.record)


def named(gpu: GpuState) -> Identified:
    return Identified(gpu.uuid, gpu.index, gpu.pci_bus_id)


async def record_for(
    ctx: ActionContext,
    *,
    node: str,
    gpus: Sequence[Identified],
    kind: str,
    xid: int | None = None,
    result: str = "",
    detail: str = "",
) -> int:
    """Append one `kind` event per GPU (those with a UUID); the number recorded. Nothing in
    a dry run or without a ledger. A service mark is not recorded twice on a GPU that has
    one open."""
    if ctx.ledger is None or ctx.dry_run:
        return 0
    recorded = 0
    for gpu in gpus:
        if not is_gpu_uuid(gpu.uuid):
            continue
        if kind == "service":
            history = await ctx.ledger.gpu_history(uuid=gpu.uuid)
            if open_service_mark(history) is not None:
                continue
        await ctx.ledger.record_gpu_event(
            uuid=gpu.uuid,
            node=node,
            kind=kind,
            at=ctx.clock.now(),
            pci_bus_id=gpu.pci_bus_id,
            gpu_index=gpu.index,
            xid=xid,
            incident_id=ctx.incident_id,
            run_id=ctx.run_id,
            result=result,
            detail=detail,
            actor=ctx.actor,
        )
        recorded += 1
    return recorded


async def involved_gpus(ctx: ActionContext, *, node: str, uuid: str) -> list[Identified]:
    """The GPUs a node-wide step is for: the one named by `uuid` (a UUID the run read from
    the agent), else the node's unhealthy ones. Read before the step acts; an agent that
    cannot be read leaves the ledger without the unnamed ones (the step itself still runs)."""
    if ctx.ledger is None or ctx.dry_run:
        return []
    try:
        gpus = await ctx.cluster.agent.gpus(node=node)
    except GpubotError as exc:
        log.warning("GPU ledger: cannot read %s's GPUs: %s", node, exc)
        gpus = []
    if uuid:
        found = [named(g) for g in gpus if g.uuid == uuid]
        return found or [Identified(uuid, None, "")]
    return [named(g) for g in gpus if not g.healthy]


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.GPU_HISTORY,
        "Record the XID in the GPU's health ledger and decide from its history: reset, "
        "reboot, service, diagnostics or check_application (output escalation, reason, "
        "recent, summary).",
        HistoryParams,
        False,
        plan_history,
        run_history,
        nothing_to_check,
        outputs={
            "node": "the node's name",
            "gpu": "the GPU's index (as the agent reports it), or the alert's when unidentified",
            "uuid": "the GPU's UUID as the agent reports it ('' when unidentified)",
            "pci_bus_id": "the GPU's PCI bus id, 0000:3b:00.0 ('' when unknown)",
            "identified": "the node agent named the GPU (else nothing was recorded)",
            "escalation": "reset, reboot, service, diagnostics or check_application",
            "reason": "why, in one line",
            "marked": "the GPU has an open service mark",
            "recent": "the last events before this incident, one line each",
            "summary": "those events as one short text",
            "recorded": "this run appended the XID to the ledger",
        },
    ),
)

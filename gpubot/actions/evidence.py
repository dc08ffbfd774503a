"""node.gather_evidence: what a node says about its GPUs, kept before a reset, reboot or
hand-off destroys it (nvidia-bug-report.sh, nvidia-smi -q -x, the kernel's NVRM/Xid lines,
the GPUs' ledger), with its sha256 in the audit trail."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import Field

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    CheckResult,
    Output,
    Params,
    PlanNote,
)
from gpubot.domain.gpus.evidence import (
    EvidencePart,
    StoredEvidence,
    build_bundle,
    human_size,
    parts_summary,
)
from gpubot.domain.k8s_names import NodeName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import GpubotError, PermanentStepError

LEDGER_PART = "gpu-ledger.json"
LEDGER_LIMIT = 500  # the node's newest GPU ledger events in the bundle


class EvidenceParams(Params):
    node: NodeName
    # Why now, for the bundle's manifest and the thread ("before the GPU reset").
    why: str = Field("", max_length=200)


async def plan(ctx: ActionContext, p: EvidenceParams) -> PlanNote:
    return PlanNote(
        f"gather evidence from {p.node}'s agent (nvidia-bug-report.sh where installed, "
        "nvidia-smi -q -x, the kernel's NVRM/Xid lines since boot, each bounded in time and "
        "size by the agent) with its GPUs' ledger; kept in the store with its sha256 in the "
        "audit trail (`gpubot evidence list`). Changes nothing on the node"
        + (f"; {p.why}" if p.why else ""),
        facts={"node": p.node},
    )


async def _ledger(ctx: ActionContext, node: str) -> EvidencePart | None:
    if ctx.ledger is None:
        return None
    try:
        events = await ctx.ledger.gpu_history(node=node, limit=LEDGER_LIMIT)
    except GpubotError as exc:
        return EvidencePart(LEDGER_PART, "failed", b"", f"the GPU ledger: {exc}")
    text = json.dumps([e.as_json() for e in events], indent=1, default=str)
    return EvidencePart(LEDGER_PART, "ok", text.encode(), f"{len(events)} ledger events")


async def run(ctx: ActionContext, p: EvidenceParams) -> Output:
    if ctx.evidence is None:
        raise PermanentStepError("no store to keep evidence in")
    await ctx.progress(f"Gathering evidence on {p.node} (nvidia-bug-report.sh can take minutes)…")
    parts = await ctx.cluster.agent.gather_evidence(node=p.node)
    ledger = await _ledger(ctx, p.node)
    if ledger is not None:
        parts = [*parts, ledger]
    now = ctx.clock.now()
    # Tens of MiB to pack and compress: off the event loop.
    bundle = await asyncio.to_thread(
        build_bundle,
        parts,
        node=p.node,
        gathered_at=now,
        extra={
            "cluster": ctx.cluster.name,
            "incident_id": ctx.incident_id,
            "run_id": ctx.run_id,
            "step": ctx.step_id,
            "why": p.why,
        },
    )
    stored = await ctx.evidence.store_evidence(
        node=p.node,
        cluster=ctx.cluster.name,
        bundle=bundle,
        created_at=now,
        incident_id=ctx.incident_id,
        run_id=ctx.run_id,
        step=ctx.step_id,
        actor=ctx.actor,
        reason=ctx.reason,
    )
    await ctx.progress(
        f"Evidence from {p.node} kept: bundle {stored.id} ({human_size(stored.size)}, sha256 "
        f"`{stored.sha256[:16]}…`, recorded in the audit trail); "
        f"{parts_summary(bundle.parts)}. Fetch it with `gpubot evidence get {stored.id}`."
    )
    return output(stored)


def output(stored: StoredEvidence) -> Output:
    """What the step records and later steps read (`steps.<id>.output.…`)."""
    statuses = {str(part["name"]): str(part["status"]) for part in stored.parts}
    return {
        "node": stored.node,
        "evidence_id": stored.id,
        "sha256": stored.sha256,
        "size": stored.size,
        "parts": statuses,
        "complete": all(s == "ok" for s in statuses.values()),
        "summary": f"evidence bundle {stored.id} from {stored.node}: {human_size(stored.size)}, "
        f"sha256 {stored.sha256[:16]}…; {parts_summary(stored.parts)}",
    }


async def check(ctx: ActionContext, p: EvidenceParams) -> CheckResult:
    """After a crash mid-step: the bundle this step kept, if it got that far (it goes in
    with its audit event, so it is there whole or not at all); else gather again."""
    if ctx.evidence is None or ctx.run_id is None:
        return CheckResult("not_done", "no store to look in; gathering again is harmless")
    for stored in await ctx.evidence.list_evidence(run_id=ctx.run_id, node=p.node):
        if stored.step == ctx.step_id:
            return CheckResult("done", f"bundle {stored.id} was kept", output(stored))
    return CheckResult("not_done", "no bundle kept by this step; gathering again")


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.NODE_GATHER_EVIDENCE,
        "Gather evidence from a node before anything destructive: nvidia-bug-report.sh where "
        "installed, nvidia-smi -q -x and the kernel's NVRM/Xid lines since boot, through the "
        "node agent (each part with its own deadline and byte cap there; one that is missing, "
        "hangs, overflows or fails is said in its status), with the node's GPU ledger events. "
        "Kept as a tar.gz in the store with its sha256 in an evidence.stored audit event "
        "(`gpubot evidence list` and `get`, checked by `gpubot audit verify`), and said in the "
        "thread. Not `mutating`: it changes nothing on the node (the agent asks for the mutate "
        "token all the same: the bug report loads the node for minutes). When it fails, the "
        "node's pool decides: evidence_required false (the default) says so in the thread "
        "and the run goes on (and can end succeeded); true stops the run before anything "
        "destructive, and the thread says why.",
        EvidenceParams,
        False,
        plan,
        run,
        check,
        outputs={
            "node": "the node's name",
            "evidence_id": "the stored bundle's id (`gpubot evidence get ID`)",
            "sha256": "the bundle's sha256, as its audit event records it",
            "size": "the bundle's size in bytes",
            "parts": "each part's status by name: ok, missing, timed_out, truncated or failed",
            "complete": "every part is ok",
            "summary": "one line: the bundle, its size and hash, and each part's status",
        },
        evidence=True,
    ),
)

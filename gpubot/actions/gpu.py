"""GPU steps through the node agent: reset a GPU (only when nothing holds it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field

from gpubot.actions.base import ActionContext, ActionSpec, CheckResult, Output, Params, PlanNote
from gpubot.actions.gpu_ledger import named, record_for
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.incidents.gpu_labels import GpuUuid, XidHint
from gpubot.domain.k8s_names import NodeName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import NotFoundError, PermanentStepError


class GpuParams(Params):
    node: NodeName
    gpu: int = Field(ge=0, le=63)


class ResetParams(GpuParams):
    # The GPU the alert named (DCGM's UUID label): the agent refuses when GPU `gpu` is not it.
    # Empty means unknown (an alert without the label, or an index chosen from the live state).
    uuid: GpuUuid = ""
    xid: XidHint = None  # the XID that led here, for the GPU's ledger

    @property
    def expected_uuid(self) -> str | None:
        return self.uuid or None


async def _gpu(ctx: ActionContext, p: GpuParams) -> GpuState:
    for gpu in await ctx.cluster.agent.gpus(node=p.node):
        if gpu.index == p.gpu:
            return gpu
    raise NotFoundError(f"{p.node} has no GPU {p.gpu}")


async def plan_reset(ctx: ActionContext, p: ResetParams) -> PlanNote:
    gpu = await _gpu(ctx, p)
    if p.expected_uuid is not None and gpu.uuid != p.expected_uuid:
        # Not a no-op: the step must run and fail, so the runbook does not go on as if reset.
        return PlanNote(
            f"reset GPU {p.gpu} on {p.node} will be refused: it is {gpu.uuid}, "
            f"not {p.expected_uuid} as the alert says",
            facts={"uuid_mismatch": True},
        )
    holders = [
        pod.ref for pod in await ctx.cluster.pods.list_pods(node=p.node) if pod.gpu_request > 0
    ]
    state = "lost" if gpu.lost else ("healthy" if gpu.healthy else f"XID {list(gpu.xid_errors)}")
    note = f"reset GPU {p.gpu} ({gpu.uuid}) on {p.node}, now {state}"
    if holders:
        note += f"; refused while GPU pods run on the node ({', '.join(holders[:5])})"
    if (await ctx.cluster.nodes.get_node(node=p.node)).draining:
        note += "; refused while the scheduler reports the node draining, not drained"
    return PlanNote(note, facts={"state": state, "gpu_pods": holders})


async def run_reset(ctx: ActionContext, p: ResetParams) -> Output:
    if (await ctx.cluster.nodes.get_node(node=p.node)).draining:
        # Slurm's DRAINING: a job, or its epilog, may still hold the GPU; DRAINED is the
        # point where nothing does.
        raise PermanentStepError(
            f"{p.node} is DRAINING, not DRAINED: Slurm still has work on it; reset the GPU "
            "once it reports drained (sinfo -n NODE)"
        )
    before = await _gpu(ctx, p)
    after = await ctx.cluster.agent.reset_gpu(node=p.node, gpu=p.gpu, uuid=p.expected_uuid)
    # The ledger gets the reset the agent did, and how it came out (a refused one is not).
    result = "ok" if after.healthy else "failed"
    gpu = named(before)
    if not gpu.uuid and p.expected_uuid is not None:  # too lost to name itself; the agent
        gpu = replace(gpu, uuid=p.expected_uuid)  # checked the alert's UUID before resetting
    await record_for(ctx, node=p.node, gpus=[gpu], kind="reset", xid=p.xid, result=result)
    if not after.healthy:
        raise PermanentStepError(
            f"{p.node} GPU {p.gpu} is still unhealthy after the reset (lost={after.lost}, "
            f"xid={list(after.xid_errors)}); the node needs a reboot"
        )
    return {"node": p.node, "gpu": p.gpu, "was_lost": before.lost, "healthy": after.healthy}


async def check_reset(ctx: ActionContext, p: ResetParams) -> CheckResult:
    gpu = await _gpu(ctx, p)
    if gpu.healthy:
        return CheckResult(
            "done",
            f"{p.node} GPU {p.gpu} reads healthy",
            {"node": p.node, "gpu": p.gpu, "healthy": True},
        )
    # A reset that never ran and one that failed look the same from here: try again.
    return CheckResult("not_done", f"{p.node} GPU {p.gpu} is still unhealthy")


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.GPU_RESET,
        "Reset one GPU through the node agent (refused while it is in use, or when `uuid` is "
        "given and the GPU at that index is another one).",
        ResetParams,
        True,
        plan_reset,
        run_reset,
        check_reset,
        auto_allowed=False,
    ),
)

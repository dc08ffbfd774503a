"""Hand a node on: request a reboot from a reboot controller, or send it for hardware service."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from gpubot.actions.base import (
    ActionContext,
    ActionSpec,
    CheckResult,
    Output,
    Params,
    PlanNote,
    nothing_to_check,
)
from gpubot.actions.gpu_ledger import involved_gpus, record_for
from gpubot.actions.node import note
from gpubot.domain.incidents.gpu_labels import GpuUuid, XidHint
from gpubot.domain.k8s_names import NodeName
from gpubot.domain.runbooks.action_names import Action
from gpubot.errors import NeedsHumanError

# A reboot controller (kured with a sentinel command, or a site controller) selects on this
# label, drains by its own rules and reboots; the annotation says who asked and why.
REBOOT_LABEL = "gpubot.io/reboot-required"
REBOOT_ANNOTATION = "gpubot.io/reboot-requested"
# Hardware service (RMA): the node stays cordoned until a human takes it back.
SERVICE_LABEL = "gpubot.io/hardware-service"
SERVICE_ANNOTATION = "gpubot.io/hardware-service-reason"


class AskParams(Params):
    node: NodeName
    reason: str = Field(min_length=1, max_length=2000)
    choices: list[str] = Field(min_length=1, max_length=6)

    @field_validator("choices")
    @classmethod
    def _short(cls, value: list[str]) -> list[str]:
        if any(not c.strip() or len(c) > 400 for c in value):
            raise ValueError("each choice is 1-400 characters")
        return value


class RebootParams(Params):
    node: NodeName
    # For the GPU health ledger: the GPU this is for (default: the node's unhealthy GPUs)
    # and the XID that led here.
    uuid: GpuUuid = ""
    xid: XidHint = None


class ServiceParams(Params):
    node: NodeName
    reason: str = Field(default="repeated GPU failure", max_length=200)
    uuid: GpuUuid = ""
    xid: XidHint = None


async def plan_reboot(ctx: ActionContext, p: RebootParams) -> PlanNote:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if node.labels.get(REBOOT_LABEL) == "true":
        return PlanNote(f"{p.node} already has a reboot requested; nothing to do", changes=False)
    return PlanNote(
        f"request a reboot of {p.node}: label {REBOOT_LABEL}=true for the reboot controller"
    )


async def run_reboot(ctx: ActionContext, p: RebootParams) -> Output:
    gpus = await involved_gpus(ctx, node=p.node, uuid=p.uuid)  # read before the reboot
    await ctx.cluster.nodes.set_node_metadata(
        node=p.node,
        labels={REBOOT_LABEL: "true"},
        annotations={REBOOT_ANNOTATION: f"{ctx.actor}: {ctx.reason}"},
    )
    await note(ctx, p.node, "GpubotRebootRequested", "reboot requested by gpubot")
    await record_for(ctx, node=p.node, gpus=gpus, kind="reboot", xid=p.xid)
    return {"node": p.node, "label": f"{REBOOT_LABEL}=true"}


async def check_reboot(ctx: ActionContext, p: RebootParams) -> CheckResult:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if node.labels.get(REBOOT_LABEL) == "true":
        return CheckResult("done", f"{p.node} has a reboot requested", {"node": p.node})
    return CheckResult("not_done", f"{p.node} has no reboot request")


async def plan_service(ctx: ActionContext, p: ServiceParams) -> PlanNote:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if SERVICE_LABEL in node.labels:
        return PlanNote(f"{p.node} is already marked for hardware service", changes=False)
    state = "cordoned" if node.unschedulable else "NOT cordoned"
    return PlanNote(
        f"mark {p.node} for hardware service (label {SERVICE_LABEL}=rma: {p.reason}); "
        f"it stays {state}"
    )


async def run_service(ctx: ActionContext, p: ServiceParams) -> Output:
    gpus = await involved_gpus(ctx, node=p.node, uuid=p.uuid)
    await ctx.cluster.nodes.set_node_metadata(
        node=p.node,
        labels={SERVICE_LABEL: "rma"},
        annotations={SERVICE_ANNOTATION: f"{p.reason} [{ctx.reason}]"},
    )
    await note(ctx, p.node, "GpubotHardwareService", f"marked for hardware service: {p.reason}")
    await record_for(ctx, node=p.node, gpus=gpus, kind="service", xid=p.xid, detail=p.reason)
    node = await ctx.cluster.nodes.get_node(node=p.node)
    return {"node": p.node, "label": f"{SERVICE_LABEL}=rma", "cordoned": node.unschedulable}


async def check_service(ctx: ActionContext, p: ServiceParams) -> CheckResult:
    node = await ctx.cluster.nodes.get_node(node=p.node)
    if SERVICE_LABEL in node.labels:
        return CheckResult(
            "done",
            f"{p.node} is marked for hardware service",
            {"node": p.node, "label": f"{SERVICE_LABEL}=rma", "cordoned": node.unschedulable},
        )
    return CheckResult("not_done", f"{p.node} is not marked for hardware service")


async def plan_ask(ctx: ActionContext, p: AskParams) -> PlanNote:
    return PlanNote(
        f"hand {p.node} to a person, who chooses: " + "; ".join(p.choices), changes=False
    )


async def run_ask(ctx: ActionContext, p: AskParams) -> Output:
    """Pause the run (needs_human) with the choices: the node stays as it is meanwhile."""
    choices = "\n".join(f"• {c}" for c in p.choices)
    raise NeedsHumanError(f"{p.reason}\nChoose one:\n{choices}")


SPECS: tuple[ActionSpec[Any], ...] = (
    ActionSpec(
        Action.NODE_ASK_HUMAN,
        "Hand the run to a person: pause it (needs_human) with the reason and the choices "
        "(e.g. retry the reset, request a reboot, mark for service); it changes nothing.",
        AskParams,
        False,
        plan_ask,
        run_ask,
        nothing_to_check,
        outputs={},  # it never finishes: the run pauses for a person
    ),
    ActionSpec(
        Action.NODE_REQUEST_REBOOT,
        "Ask the reboot controller to reboot the node (label + annotation + Event).",
        RebootParams,
        True,
        plan_reboot,
        run_reboot,
        check_reboot,
        auto_allowed=False,
    ),
    ActionSpec(
        Action.NODE_MARK_FOR_SERVICE,
        "Label the node for hardware service (RMA); it stays cordoned.",
        ServiceParams,
        True,
        plan_service,
        run_service,
        check_service,
    ),
)

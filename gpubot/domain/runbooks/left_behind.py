"""Where things stand after a run stops: what it left on its node or workload, and what releases it.

Read from live state where it can be (the node as the cluster reports it now), from the run's
own steps where it cannot. Node names, annotations and taints are data: the text goes out in
a neutral message, which the chat layer escapes like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gpubot.domain.fleet.cluster import CORDON_BY_ANNOTATION, CORDON_REASON_ANNOTATION, NodeInfo
from gpubot.domain.fleet.slurm import is_slurm
from gpubot.domain.runbooks.action_names import Action

TargetKind = Literal["node", "workload"]
GPUBOT_TAINT_PREFIX = "gpubot.io/"
XID_TAINT = "gpubot.io/xid"
SERVICE_LABEL = "gpubot.io/hardware-service"  # as actions/handoff.py writes them
REBOOT_LABEL = "gpubot.io/reboot-required"
DEFAULT_XID = "79"


@dataclass(frozen=True)
class StepRecord:
    """One step of the run as the store keeps it (its action, status, args and output)."""

    action: str
    status: str  # a StepStatus value
    args: Mapping[str, Any]
    output: Mapping[str, Any]
    attempts: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @property
    def started(self) -> bool:
        """Its action ran at least once (it may have acted part way)."""
        return self.succeeded or self.attempts > 0


@dataclass(frozen=True)
class Standing:
    """The state a stopped run leaves, and the commands that release it."""

    lines: tuple[str, ...]
    release: tuple[str, ...] = ()

    def text(self) -> str:
        return " ".join(self.lines)


def _changes_on_node(node: str, steps: Sequence[StepRecord]) -> tuple[list[str], bool]:
    """What this run's steps did to the node, in words, and whether a drain stopped part way."""
    done: list[str] = []
    half_drained = False
    for s in steps:
        if s.action == Action.NODE_CORDON and s.succeeded and not s.output.get("was_cordoned"):
            done.append(f"cordoned {node}")
        elif s.action == Action.NODE_TAINT and s.succeeded:
            done.append(f"added taint {s.output.get('taint') or s.args.get('key', '?')}")
        elif s.action == Action.NODE_DRAIN and s.succeeded:
            evicted = len(s.output.get("evicted") or ()) + len(s.output.get("deleted") or ())
            done.append(f"drained it ({evicted} pod(s) evicted)")
        elif s.action == Action.NODE_DRAIN and s.started:
            half_drained = True
        elif s.action == Action.GPU_RESET and s.succeeded:
            done.append(f"reset GPU {s.args.get('gpu', '?')}")
        elif s.action == Action.NODE_REQUEST_REBOOT and s.succeeded:
            done.append("requested a reboot")
        elif s.action == Action.NODE_MARK_FOR_SERVICE and s.succeeded:
            done.append("marked it for hardware service")
        elif s.action == Action.GPU_POWER_CAP and s.succeeded:
            done.append(
                f"capped GPU {s.output.get('gpu', '?')}'s power limit to "
                f"{s.output.get('limit_w', '?')} W (it was {s.output.get('previous_w', '?')} W)"
            )
        elif s.action == Action.GPU_POWER_RESTORE and s.succeeded:
            done.append(
                f"restored GPU {s.output.get('gpu', '?')}'s power limit to "
                f"{s.output.get('limit_w', '?')} W"
            )
        elif s.action == Action.NODE_UNTAINT and s.succeeded:
            done.append(f"removed taint {s.output.get('taint') or s.args.get('key', '?')}")
        elif s.action == Action.NODE_UNCORDON and s.succeeded:
            done.append(f"uncordoned {node}")
    return done, half_drained


def _xid_of(steps: Sequence[StepRecord], fallback: str) -> str:
    for s in steps:
        if s.action in (Action.NODE_TAINT, Action.NODE_UNTAINT) and s.args.get("key") == XID_TAINT:
            return str(s.args.get("value") or fallback)
    return fallback


def _release_node(node: str, xid: str) -> str:
    return f"/gpu run release-node node={node} xid={xid}"


def _live(node: str, info: NodeInfo, xid: str) -> tuple[list[str], list[str]]:
    """What the live node shows, and what releases it."""
    ours = [t for t in info.taints if t.key.startswith(GPUBOT_TAINT_PREFIX)]
    reason = info.annotations.get(CORDON_REASON_ANNOTATION, "")
    foreign = info.unschedulable and not reason.startswith("gpubot ")
    state: list[str] = []
    if info.unschedulable and foreign:
        who = info.annotations.get(CORDON_BY_ANNOTATION, "") or "someone else"
        why = f" ({reason})" if reason else ""
        state.append(f"cordoned by {who}{why}, not by gpubot")
    elif info.unschedulable:
        state.append("still cordoned by gpubot")
    else:
        state.append("schedulable (not cordoned)")
    if ours:
        state.append("tainted " + ", ".join(str(t) for t in ours))
    else:
        state.append("without gpubot taints")
    if info.labels.get(SERVICE_LABEL):
        state.append(f"marked for hardware service ({SERVICE_LABEL})")
    if info.labels.get(REBOOT_LABEL):
        state.append(f"waiting for a requested reboot ({REBOOT_LABEL})")
    lines = [f"Now (read live): {node} is " + ", ".join(state) + "."]
    release: list[str] = []
    xids = sorted({t.value for t in ours if t.key == XID_TAINT and t.value}) or [xid]
    if foreign:
        who = info.annotations.get(CORDON_BY_ANNOTATION, "") or "whoever cordoned it"
        # A Slurm node's drain is released by Slurm's own command (the reason goes with it).
        undo = (
            f"scontrol update NodeName={node} State=RESUME"
            if is_slurm(info)
            else f"kubectl uncordon {node}"
        )
        what = "drain" if is_slurm(info) else "cordon"
        lines.append(
            f"The {what} is {who}'s: gpubot does not release it. Once they are done: `{undo}`."
        )
        release.append(undo)
        release.extend(f"kubectl taint nodes {node} {t}-" for t in ours)
        if ours:
            lines.append(
                "gpubot's taint can go with "
                + ", ".join(f"`kubectl taint nodes {node} {t}-`" for t in ours)
                + "."
            )
    elif info.unschedulable or ours:
        release.extend(_release_node(node, x) for x in xids)
        lines.append(
            "To release it (GPU checks, then untaint and uncordon with approval): "
            + ", ".join(f"`{_release_node(node, x)}`" for x in xids)
            + "."
        )
    else:
        lines.append("Nothing to release.")
    return lines, release


def _from_steps(node: str, done: list[str], steps: Sequence[StepRecord], xid: str) -> list[str]:
    """The release a run's own steps call for, when the node cannot be read."""
    foreign = next(
        (s.output for s in steps if s.action == Action.NODE_CORDON and s.output.get("foreign")),
        None,
    )
    if foreign is not None:
        who = str(foreign.get("cordoned_by") or "someone else")
        return [f"kubectl uncordon {node}  # cordoned by {who}, not by gpubot"]
    return [_release_node(node, xid)] if done else []


def node_standing(
    *,
    node: str,
    steps: Sequence[StepRecord],
    live: NodeInfo | None,
    read_error: str = "",
    xid: str = "",
) -> Standing:
    """Where a node stands after a run on it stopped: `live` is the node read now (None when
    it could not be read: `read_error` says why, and the run's own steps stand in)."""
    xid = _xid_of(steps, xid or DEFAULT_XID)
    done, half_drained = _changes_on_node(node, steps)
    lines = [
        f"This run {', '.join(done)}." if done else f"This run changed nothing on {node}.",
    ]
    if half_drained:
        lines.append(
            "A drain started and did not finish: the pods it evicted stay evicted, the rest "
            "still run there."
        )
    if live is not None:
        now, release = _live(node, live, xid)
        return Standing((*lines, *now), tuple(release))
    release = _from_steps(node, done, steps, xid)
    lines.append(
        f"Could not read {node} live ({read_error or 'no answer'}); going by this run's steps."
    )
    if release:
        lines.append("To release it: " + ", ".join(f"`{r}`" for r in release) + ".")
    return Standing(tuple(lines), tuple(release))


def workload_standing(*, steps: Sequence[StepRecord]) -> Standing:
    """Where a workload stands after an idle-reclaim run stopped: the restore the reclaim
    step recorded, or that nothing was touched."""
    for s in steps:
        if s.action == Action.WORKLOAD_RECLAIM and s.succeeded:
            what = str(s.output.get("workload") or "the workload")
            restore = str(s.output.get("restore") or "")
            lines = [f"This run reclaimed {what} (scaled to zero or deleted)."]
            if restore:
                lines.append(f"To restore it: `{restore}`.")
            return Standing(tuple(lines), (restore,) if restore else ())
        if s.action == Action.WORKLOAD_RECLAIM and s.started:
            return Standing(
                (
                    "The reclaim started and did not finish: check the workload "
                    "(`kubectl get` it) before anything else.",
                )
            )
    return Standing(("This run changed nothing: the workload keeps running as it was.",))

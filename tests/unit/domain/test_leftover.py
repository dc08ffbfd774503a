"""Where a stopped run leaves its node or workload, from live state or from its own steps."""

from __future__ import annotations

from gpubot.domain.fleet.cluster import (
    CORDON_BY_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    NodeInfo,
    Taint,
)
from gpubot.domain.runbooks.left_behind import StepRecord, node_standing, workload_standing

NODE = "gpu-node-07"
XID = Taint("gpubot.io/xid", "79", "NoSchedule")
OURS = {CORDON_BY_ANNOTATION: "gpubot", CORDON_REASON_ANNOTATION: "gpubot xid79/cordon run=r"}


def step(
    action: str,
    status: str = "succeeded",
    *,
    args: dict[str, object] | None = None,
    output: dict[str, object] | None = None,
    attempts: int | None = None,
) -> StepRecord:
    ran = attempts if attempts is not None else (1 if status == "succeeded" else 0)
    return StepRecord(action, status, args or {}, output or {}, ran)


CORDON = step("node.cordon", output={"was_cordoned": False})
TAINT = step(
    "node.taint",
    args={"key": "gpubot.io/xid", "value": "79"},
    output={"taint": "gpubot.io/xid=79:NoSchedule"},
)


def test_quarantined_node_is_reported_live_with_gpubots_release() -> None:
    """Cordoned by gpubot and tainted: both said, and release-node with the taint's XID."""
    live = NodeInfo(NODE, unschedulable=True, taints=(XID,), annotations=OURS)
    got = node_standing(node=NODE, steps=[CORDON, TAINT], live=live)
    assert got.lines[0] == f"This run cordoned {NODE}, added taint gpubot.io/xid=79:NoSchedule."
    assert f"{NODE} is still cordoned by gpubot, tainted gpubot.io/xid=79:NoSchedule." in got.text()
    assert got.release == (f"/gpu run release-node node={NODE} xid=79",)


def test_release_uses_the_xid_on_the_live_taint() -> None:
    """The release names the XID the live taint carries, not a default."""
    live = NodeInfo(
        NODE, unschedulable=True, taints=(Taint("gpubot.io/xid", "48"),), annotations=OURS
    )
    got = node_standing(node=NODE, steps=[], live=live, xid="79")
    assert got.release == (f"/gpu run release-node node={NODE} xid=48",)


def test_untouched_node_in_service_has_nothing_to_release() -> None:
    """No step acted and the node is schedulable without gpubot taints."""
    got = node_standing(node=NODE, steps=[step("node.gpu_health")], live=NodeInfo(NODE))
    assert got.lines[0] == f"This run changed nothing on {NODE}."
    assert "schedulable (not cordoned), without gpubot taints" in got.text()
    assert "Nothing to release." in got.text()
    assert got.release == ()


def test_foreign_cordon_names_the_owner_and_offers_kubectl_not_release_node() -> None:
    """A cordon that is not gpubot's: its owner and reason are named, `kubectl uncordon` is
    the fallback, gpubot's own taint goes with `kubectl taint …-`, no release-node."""
    theirs = {CORDON_BY_ANNOTATION: "alice", CORDON_REASON_ANNOTATION: "BIOS update"}
    live = NodeInfo(NODE, unschedulable=True, taints=(XID,), annotations=theirs)
    got = node_standing(node=NODE, steps=[TAINT], live=live)
    assert "cordoned by alice (BIOS update), not by gpubot" in got.text()
    assert "The cordon is alice's" in got.text()
    assert got.release == (
        f"kubectl uncordon {NODE}",
        f"kubectl taint nodes {NODE} gpubot.io/xid=79:NoSchedule-",
    )
    assert not any("release-node" in r for r in got.release)


def test_half_done_drain_is_said() -> None:
    """A drain step that ran and did not succeed (cancelled or failed) is a drain half done."""
    drain = step("node.drain", status="cancelled", attempts=1)
    live = NodeInfo(NODE, unschedulable=True, taints=(XID,), annotations=OURS)
    got = node_standing(node=NODE, steps=[CORDON, TAINT, drain], live=live)
    assert "A drain started and did not finish" in got.text()


def test_drain_never_started_is_not_a_half_drain() -> None:
    """A drain denied before it ran (no attempt) evicted nothing."""
    drain = step("node.drain", status="denied", attempts=0)
    got = node_standing(node=NODE, steps=[drain], live=NodeInfo(NODE))
    assert "drain" not in got.text().lower()


def test_unreadable_node_falls_back_to_the_runs_steps() -> None:
    """No live read: the text says why, and the release comes from what the run did."""
    got = node_standing(node=NODE, steps=[CORDON, TAINT], live=None, read_error="timeout")
    assert f"Could not read {NODE} live (timeout)" in got.text()
    assert got.release == (f"/gpu run release-node node={NODE} xid=79",)


def test_unreadable_node_that_was_foreign_points_at_its_owner() -> None:
    """No live read, and the run's cordon found the node cordoned by someone else."""
    found = step(
        "node.cordon", output={"was_cordoned": True, "foreign": True, "cordoned_by": "bob"}
    )
    got = node_standing(node=NODE, steps=[found], live=None, read_error="timeout")
    assert got.release == (f"kubectl uncordon {NODE}  # cordoned by bob, not by gpubot",)
    assert "This run changed nothing" in got.text()


def test_unreadable_untouched_node_offers_no_release() -> None:
    """No live read and no change by the run: no command is offered."""
    got = node_standing(node=NODE, steps=[], live=None, read_error="timeout")
    assert got.release == ()


def test_reclaimed_workload_gives_the_recorded_restore() -> None:
    """A reclaim that succeeded: the restore command the step recorded."""
    restore = "kubectl -n ml scale deployment/train --replicas=2"
    done = step("workload.reclaim", output={"workload": "deployment/train", "restore": restore})
    got = workload_standing(steps=[done])
    assert got.release == (restore,)
    assert f"To restore it: `{restore}`." in got.text()


def test_workload_never_reclaimed_is_unchanged() -> None:
    """Denied (or objected to) before the reclaim: nothing changed."""
    got = workload_standing(steps=[step("workload.reclaim", status="denied")])
    assert got.release == ()
    assert "changed nothing" in got.text()


def test_power_cap_left_in_place_is_said() -> None:
    """A thermal run stopped after its cap: the cap and the limit it replaced are said."""
    cap = step("gpu.power_cap", output={"gpu": 2, "limit_w": 490.0, "previous_w": 700.0})
    got = node_standing(node=NODE, steps=[cap], live=NodeInfo(NODE))
    assert "capped GPU 2's power limit to 490.0 W (it was 700.0 W)" in got.text()


def test_a_slurm_drain_someone_else_made_is_released_with_scontrol() -> None:
    live = NodeInfo(
        "gpu042",
        unschedulable=True,
        annotations={
            CORDON_REASON_ANNOTATION: "bad PSU (ops)",
            CORDON_BY_ANNOTATION: "root",
            "slurm.schedmd.com/state": "drained",
        },
    )
    got = node_standing(node="gpu042", steps=[], live=live)
    assert got.release == ("scontrol update NodeName=gpu042 State=RESUME",)
    assert "The drain is root's: gpubot does not release it." in got.text()

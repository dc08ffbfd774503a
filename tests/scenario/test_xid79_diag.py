"""XID 79 on the simulated cluster, through Slack: verify before release with DCGM diagnostics.

The reset works and NVML reads the GPU again; the node goes back only when DCGM's
diagnostics pass too. When they fail, or cannot run, it stays cordoned and tainted, the
thread names the failing test with DCGM's message, and the run waits for a person with three
choices: retry the reset, request a reboot, mark for service.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness, slack_harness

from gpubot.backends.simulated.scenarios import dcgm_unavailable, fail_diag, inject_xid
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.errors import PermanentStepError
from gpubot.knowledge.dcgm_diag import DiagReport

XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
NODE = "gpu-node-07"  # the fixture alert's Hostname, GPU 3
DBE = "GPU 3 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors."


pytestmark = pytest.mark.usefixtures("clean_env")


async def run_xid79(h: SlackHarness) -> tuple[Run, str]:
    """The alert in, every approval clicked (U1 then U2) until the run stops asking."""
    inject_xid(h.sim, node=NODE, gpu=3)
    reply = await h.client.post(
        "/alertmanager", content=XID79, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    await h.settle()
    [run] = [r for r in await h.app.store.list_runs() if r.runbook == "xid79"]
    await approve_until_it_stops(h, run)
    [root] = h.standin.roots(CHANNEL)
    thread = "\n".join(h.standin.text_of(m) for m in h.standin.thread(root.ts))
    return await h.app.store.get_run(run.id), thread


async def approve_until_it_stops(h: SlackHarness, run: Run) -> None:
    """Click each approval the run asks for (U2, then U1, …) until it ends or needs a person."""
    clicks = 0
    for _ in range(2000):
        current = await h.app.store.get_run(run.id)
        if current.status.finished or current.status is RunStatus.NEEDS_HUMAN:
            return
        pending = [
            a.id
            for a in await h.app.store.approvals_for(run.id)
            if a.status is ApprovalStatus.PENDING
        ]
        if pending and clicks < 12:
            await h.click(pending[0], user="U1" if clicks % 2 else "U2")
            clicks += 1
        await h.settle()
    raise AssertionError(f"run {run.id} still {current.status.value}: {current.note}")


async def steps_of(h: SlackHarness, run: Run) -> dict[str, str]:
    return {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}


async def assert_quarantined(h: SlackHarness) -> None:
    node = await h.sim.kube.get_node(node=NODE)
    assert node.unschedulable
    assert any(t.key == "gpubot.io/xid" and t.value == "79" for t in node.taints)


async def test_reset_works_but_diag_fails_so_the_node_stays_quarantined_for_a_person(
    h: SlackHarness,
) -> None:
    fail_diag(h.sim, node=NODE, gpu=3, test="Memory", message=DBE)
    run, thread = await run_xid79(h)

    steps = await steps_of(h, run)
    assert steps["reset"] == "succeeded"
    assert steps["verify"] == "succeeded"  # NVML reads the GPU healthy again…
    assert steps["diag"] == "succeeded"  # …but DCGM's diagnostics say otherwise
    assert steps["untaint"] == "skipped"
    assert steps["uncordon"] == "skipped"
    assert steps["released"] == "skipped"
    assert steps["diag-failed"] == "succeeded"
    assert steps["diag-handoff"] == "needs_human"
    assert run.status is RunStatus.NEEDS_HUMAN
    await assert_quarantined(h)
    [diag] = [s for s in await h.app.store.steps(run.id) if s.step_id == "diag"]
    assert diag.output["passed"] is False
    assert diag.output["failed_tests"] == [{"test": "Memory", "gpu": 3, "messages": [DBE]}]

    # The thread names the failing test with DCGM's own message, and offers three choices.
    assert "Memory on GPU 3" in thread
    assert "cuCtxCreate" in thread
    assert "stays cordoned and tainted gpubot.io/xid=79:NoSchedule" in thread
    assert "retry the reset: /gpu run gpu-reset node=gpu-node-07 gpu=3 xid=79" in thread
    assert "request a reboot: /gpu run node-handoff node=gpu-node-07 to=reboot" in thread
    assert "mark for service: /gpu run node-handoff node=gpu-node-07 to=service" in thread

    # The GPU's ledger keeps what happened, in order: the XID, the reset, the failed test;
    # and the thread points at it.
    uuid = (await h.sim.agent.gpus(node=NODE))[3].uuid
    history = await h.app.store.gpu_history(uuid=uuid)
    assert [(e.kind, e.result) for e in history] == [("xid", ""), ("reset", "ok"), ("diag", "fail")]
    assert history[-1].detail == "level 1: failed Memory"
    assert {e.incident_id for e in history} == {run.incident_id}
    assert f"gpubot gpus history {NODE}" in thread


async def test_diag_that_cannot_run_is_a_failure_to_verify_not_a_pass(
    h: SlackHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_dcgmi(*, node: str, level: int, gpus: Sequence[int] | None = None) -> DiagReport:
        raise PermanentStepError(
            f"node agent on {node}: dcgmi is not installed (not on the agent's PATH)"
        )

    monkeypatch.setattr(h.sim.agent, "diag", no_dcgmi)
    run, thread = await run_xid79(h)
    steps = await steps_of(h, run)
    assert steps["diag"] == "failed"
    assert steps["uncordon"] == "skipped"
    assert steps["diag-handoff"] == "needs_human"
    await assert_quarantined(h)
    assert "DCGM diagnostics could not verify them" in thread
    assert "dcgmi is not installed" in thread
    uuid = (await h.sim.agent.gpus(node=NODE))[3].uuid
    kinds = [e.kind for e in await h.app.store.gpu_history(uuid=uuid)]
    assert kinds == ["xid", "reset"]  # no diagnostics result: none was read


async def test_diag_passes_and_the_node_is_released(h: SlackHarness) -> None:
    run, thread = await run_xid79(h)
    steps = await steps_of(h, run)
    assert steps["diag"] == "succeeded"
    assert steps["uncordon"] == "succeeded"
    assert steps["diag-handoff"] == "skipped"
    assert run.status is RunStatus.SUCCEEDED
    node = await h.sim.kube.get_node(node=NODE)
    assert not node.unschedulable
    assert not any(t.key == "gpubot.io/xid" for t in node.taints)
    assert "passed DCGM diagnostics level 1" in thread
    assert "back in service" in thread


async def test_the_choice_retry_the_reset_runs_reset_verify_and_diag_again(
    h: SlackHarness,
) -> None:
    fail_diag(h.sim, node=NODE, gpu=3, test="Memory", message=DBE)
    run, _ = await run_xid79(h)
    assert run.status is RunStatus.NEEDS_HUMAN
    # Still bad: the retry keeps the node quarantined and says so.
    reply = await h.slash(f"run gpu-reset node={NODE} gpu=3 xid=79", user="U1")
    assert reply.status_code == 200
    await h.settle()
    for _ in range(500):  # the command's run starts after the slash command is answered
        retries = [r for r in await h.app.store.list_runs() if r.runbook == "gpu-reset"]
        if retries:
            break
        await h.settle()
    [retry] = retries
    await approve_until_it_stops(h, retry)
    steps = await steps_of(h, retry)
    assert steps["reset"] == "succeeded"
    assert steps["diag"] == "succeeded"
    assert steps["untaint"] == "skipped"
    assert steps["still-bad"] == "succeeded"
    await assert_quarantined(h)


# -- DCGM that cannot run: said in the plan, then policy.diag_unavailable decides -----------

NO_DCGMI = "dcgmi is not installed (not on the agent's PATH)"


async def test_without_dcgm_the_plan_says_so_and_the_release_approval_names_it(
    h: SlackHarness,
) -> None:
    """The default install: the agent's image has no dcgmi. Before anything runs the plan
    says diagnostics cannot run and what happens then (policy.diag_unavailable: approve);
    the release is asked for with the missing check named, and once approved the node is
    back in service with the thread saying it was not verified by DCGM."""
    dcgm_unavailable(h.sim, node=NODE, reason=NO_DCGMI)
    run, thread = await run_xid79(h)

    plan = thread.split("Approval needed")[0]
    assert "Before anything runs: step diag: DCGM diagnostics cannot run on gpu-node-07" in plan
    assert NO_DCGMI in plan
    assert "the release then asks for an approval that names the missing check" in plan
    steps = await steps_of(h, run)
    assert (steps["diag"], steps["uncordon"], steps["diag-handoff"]) == (
        "succeeded",
        "succeeded",
        "skipped",
    )
    [diag] = [s for s in await h.app.store.steps(run.id) if s.step_id == "diag"]
    assert (diag.output["passed"], diag.output["unavailable"]) == (False, True)
    asked = [
        h.standin.text_of(m)
        for m in h.standin.thread(h.standin.roots(CHANNEL)[0].ts)
        if "step `uncordon`" in h.standin.text_of(m)
    ]
    assert asked, thread
    assert "WITHOUT a check it should have passed" in asked[0]
    assert f"DCGM diagnostics level 1 could not run: {NO_DCGMI}" in asked[0]
    assert run.status is RunStatus.SUCCEEDED
    assert not (await h.sim.kube.get_node(node=NODE)).unschedulable
    assert "not verified by DCGM" in thread


@pytest.fixture
async def h_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    """The harness with policy.diag_unavailable: stop."""
    policy = {
        "groups": {"oncall": {"users": ["U1", "U2"], "usergroups": ["S0ONCALL"]}},
        "diag_unavailable": "stop",
    }
    async with slack_harness(tmp_path, monkeypatch, policy=policy) as harness:
        yield harness


async def test_without_dcgm_and_policy_stop_the_node_stays_out_for_a_person(
    h_stop: SlackHarness,
) -> None:
    h = h_stop
    dcgm_unavailable(h.sim, node=NODE, reason=NO_DCGMI)
    run, thread = await run_xid79(h)
    assert "the node then stays cordoned and tainted for a human" in thread
    steps = await steps_of(h, run)
    assert (steps["diag"], steps["uncordon"], steps["diag-handoff"]) == (
        "failed",
        "skipped",
        "needs_human",
    )
    assert "policy.diag_unavailable: stop" in thread
    await assert_quarantined(h)

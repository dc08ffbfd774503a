"""One XID 79 storm over three node pools on the simulated cluster, through Slack: the
observe pool changes nothing, the quarantine pool cordons and offers nothing destructive,
and the remediate pool cordons up to its own cap and drains only inside its maintenance
window (on the fake clock); a node relabelled mid-incident follows its new pool from the
next step, and its thread says so."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_harness import CHANNEL, FIXTURES, SlackHarness, slack_harness

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.engine.clock import FakeClock

pytestmark = pytest.mark.usefixtures("clean_env")

LABEL = "gpubot.io/pool"
CANARY = ["gpu-node-01", "gpu-node-02"]  # observe
TRAINING = ["gpu-node-03", "gpu-node-04"]  # quarantine
INFERENCE = ["gpu-node-05", "gpu-node-06", "gpu-node-07"]  # remediate, window, cap 2
NOON = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)  # a Friday, outside 02:00-06:00
POLICY = {
    "groups": {"oncall": {"users": ["U1", "U2"], "usergroups": ["S0ONCALL"]}},
    "blast_radius": {
        "max_cordoned_count": 8,
        "max_cordoned_fraction": 1.0,
        "max_concurrent_drains": 4,
    },
    "pools": [
        {"name": "canary", "mode": "observe", "match": {LABEL: "canary"}},
        {"name": "training", "mode": "quarantine", "match": {LABEL: "training"}},
        {
            "name": "inference",
            "mode": "remediate",
            "match": {LABEL: "inference"},
            "window": "02:00-06:00",
            "blast_radius": {"max_cordoned_count": 2},
        },
    ],
}


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    async with slack_harness(
        tmp_path, monkeypatch, clock=FakeClock(NOON), policy=POLICY
    ) as harness:
        label(harness, CANARY, "canary")
        label(harness, TRAINING, "training")
        label(harness, INFERENCE, "inference")
        yield harness


def label(h: SlackHarness, nodes: list[str], pool: str) -> None:
    with h.sim.mutation() as state:
        for node in nodes:
            state.node(node).labels[LABEL] = pool


def xid_payload(node: str, n: int) -> bytes:
    body: dict[str, Any] = json.loads((FIXTURES / "xid79_firing.json").read_text())
    alert = copy.deepcopy(body["alerts"][0])
    alert["labels"].update({"Hostname": node, "gpu": "3"})
    alert["annotations"] = {
        "description": f"DCGM_FI_DEV_XID_ERRORS reported XID 79 on GPU 3 of {node}",
        "summary": f"GPU 3 on {node} has fallen off the bus (XID 79)",
    }
    alert["fingerprint"] = f"{n:04x}feedface0000"
    body["alerts"] = [alert]
    body["groupKey"] = f'{{}}:{{Hostname="{node}"}}'
    body["commonLabels"] = {**body.get("commonLabels", {}), "Hostname": node}
    body["commonAnnotations"] = alert["annotations"]
    return json.dumps(body).encode()


async def storm(h: SlackHarness) -> dict[str, Run]:
    nodes = CANARY + TRAINING + INFERENCE
    for n, node in enumerate(nodes):
        inject_xid(h.sim, node=node, gpu=3)
        reply = await h.client.post(
            "/alertmanager",
            content=xid_payload(node, n),
            headers={"content-type": "application/json"},
        )
        assert reply.status_code == 200
    await h.settle()
    runs = {r.target: r for r in await h.app.store.list_runs() if r.runbook == "xid79"}
    assert sorted(runs) == sorted(nodes)
    return {node: r for node, r in runs.items() if node is not None}


async def steps(h: SlackHarness, run: Run) -> dict[str, str]:
    return {s.step_id: s.status.value for s in await h.app.store.steps(run.id)}


async def cordoned(h: SlackHarness, node: str) -> bool:
    return bool((await h.sim.kube.get_node(node=node)).unschedulable)


async def pending(h: SlackHarness, run: Run) -> list[str]:
    return [
        a.id for a in await h.app.store.approvals_for(run.id) if a.status is ApprovalStatus.PENDING
    ]


def thread_of(h: SlackHarness, node: str) -> str:
    for root in h.standin.roots(CHANNEL):
        text = "\n".join(h.standin.text_of(m) for m in h.standin.thread(root.ts))
        if node in h.standin.text_of(root):
            return text
    raise AssertionError(f"no thread for {node}")


async def until(h: SlackHarness, run: Run, step: str, status: str) -> None:
    """Settle until the step has `status`: a click is answered before the vote is counted."""
    for _ in range(200):
        await h.settle()
        if (await steps(h, run))[step] == status:
            return
    raise AssertionError(f"{run.target} {step}: {(await steps(h, run))[step]}, not {status}")


async def tick(h: SlackHarness) -> None:
    await h.app.service.background.tick()
    await h.settle()


async def test_one_storm_does_what_each_pool_says(h: SlackHarness) -> None:
    runs = await storm(h)

    # observe: planned, told and recorded; nothing cordoned, nothing asked.
    for node in CANARY:
        assert not await cordoned(h, node)
        assert await pending(h, runs[node]) == []
        events = await h.app.store.events(run_id=runs[node].id)
        assert {e.step for e in events if e.kind == "step.observed"} >= {"cordon", "drain"}
        assert "Pool: canary (observe): label gpubot.io/pool=canary matched" in thread_of(h, node)

    # quarantine: cordoned and tainted; the drain is not offered; the run ends.
    for node in TRAINING:
        assert await cordoned(h, node)
        status = await steps(h, runs[node])
        assert (status["cordon"], status["drain"]) == ("succeeded", "skipped")
        assert await pending(h, runs[node]) == []
        assert (await h.app.store.get_run(runs[node].id)).status is RunStatus.SUCCEEDED
        assert "Not offered: pool training (quarantine)" in thread_of(h, node)

    # remediate with its own cap of 2: two of its three nodes cordoned, the third held by
    # the pool's cap (the fleet's, 8, is far from reached: 4 cordoned in all).
    held = [
        n for n in INFERENCE if (await h.app.store.get_run(runs[n].id)).status is RunStatus.HELD
    ]
    assert len(held) == 1
    [third] = held
    first, second = [n for n in INFERENCE if n != third]
    assert (await cordoned(h, first), await cordoned(h, second), await cordoned(h, third)) == (
        True,
        True,
        False,
    )
    note = (await h.app.store.get_run(runs[third].id)).note
    assert note.startswith("pool inference: blast radius: 2 of 3 GPU nodes of pool inference")

    # Their drains are asked and approved at noon, then wait for the window (said once).
    for node in (first, second):
        [ask] = await pending(h, runs[node])
        reply = await h.click(ask, user="U1")
        assert reply.status_code == 200, reply.text
    for node in (first, second):
        await until(h, runs[node], "drain", "held")
        assert "outside the maintenance window of pool inference (daily 02:00-06:00 UTC)" in (
            thread_of(h, node)
        )
    h.clock.advance(timedelta(hours=13, minutes=59))  # 01:59: still outside
    await tick(h)
    assert [(await steps(h, runs[n]))["drain"] for n in (first, second)] == ["held", "held"]

    # `second` is moved into the canary pool (observe) while its drain waits: the drain,
    # approved already, runs at once (the canary pool has no window); its reset is only
    # recorded as what it would do, and its thread says it moved.
    label(h, [second], "canary")
    await tick(h)
    status = await steps(h, runs[second])
    assert status["drain"] == "succeeded"
    events = await h.app.store.events(run_id=runs[second].id)
    assert not [e for e in events if e.kind == "step.started" and e.step == "reset"]
    text = thread_of(h, second)
    assert "The node moved from pool inference to pool canary (observe)" in text
    assert (await steps(h, runs[first]))["drain"] == "held"

    h.clock.advance(timedelta(minutes=1))  # 02:00: the window opens
    await tick(h)
    assert (await steps(h, runs[first]))["drain"] == "succeeded"


async def test_gpu_policy_prints_what_applies_to_the_node(h: SlackHarness) -> None:
    """`/gpu policy node=` for a node of the inference pool: the fleet's cap and the pool's
    own, its escalation and diagnostics, and whether evidence is required."""
    assert (await h.slash(f"policy node={INFERENCE[0]}")).status_code == 200

    def got() -> bool:
        return any(c.method == "response_url" for c in h.standin.calls)

    await h.standin.wait_for(got)
    [call] = [c for c in h.standin.calls if c.method == "response_url"]
    answer = json.dumps(call.args)
    assert "label gpubot.io/pool=inference matched" in answer
    assert "fleet: 8 nodes or 100% cordoned, 4 drain(s) at a time" in answer
    assert "pool inference: 2 nodes or 100% cordoned, 4 drain(s) at a time" in answer
    assert "global: 1 reset(s) before a reboot, 2 reboot(s) before service" in answer
    assert "not required (a failed gathering is said; the run goes on)" in answer

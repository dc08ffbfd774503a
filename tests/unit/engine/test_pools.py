"""Node pools: the same XID 79 alert does what the node's pool says (observe, quarantine,
remediate); the plan and the thread say which pool applied and why; a node whose labels
change mid-incident follows its new pool from the next step, and the thread says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.pools import Pool, choose_pool, parse_window
from gpubot.domain.control.safety_caps import Policy
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.engine.service import GpubotService
from gpubot.errors import ApprovalError

MakeHarness = Any  # the `harness` fixture in tests/unit/conftest.py
FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"
XID79 = (Path(__file__).parents[3] / "runbooks" / "xid79.yaml").read_text()
NODE = "gpu-node-07"  # the captured alert's Hostname, GPU 3
LABEL = "gpubot.io/pool"
ONCALL = ApproverGroup("oncall", users=frozenset({"U1", "U2"}))
POOLS = (
    Pool("canary", mode="observe", match={LABEL: "canary"}),
    Pool("training", mode="quarantine", match={LABEL: "training"}),
    Pool("inference", mode="remediate", match={LABEL: "inference"}),
)


def policy() -> Policy:
    return Policy(groups={"oncall": ONCALL}, pools=POOLS)


def label(cluster: SimulatedCluster, value: str) -> None:
    with cluster.mutation() as state:
        state.node(NODE).labels[LABEL] = value


async def deliver(service: GpubotService) -> None:
    body = (FIXTURES / "xid79_firing.json").read_bytes()
    await service.process(await service.ingest(AlertmanagerPayload.model_validate_json(body)))
    await service.wait_idle()


async def quarantined(h: Any) -> bool:
    return bool((await h.cluster.kube.get_node(node=NODE)).unschedulable)


def test_the_first_pool_that_selects_the_node_wins_and_says_which_label() -> None:
    choice = choose_pool(POOLS, Pool("default"), cluster="sim", labels={LABEL: "training"})
    assert (choice.pool.name, choice.why) == ("training", "label gpubot.io/pool=training matched")
    other = choose_pool(POOLS, Pool("default"), cluster="sim", labels={})
    assert (other.pool.name, other.why) == ("default", "no pool matched: the default policy")
    east = Pool("east", clusters=frozenset({"east"}))
    assert choose_pool((east,), Pool("default"), cluster="west", labels={}).pool.name == "default"


async def test_observe_plans_tells_and_records_but_changes_nothing(harness: MakeHarness) -> None:
    h = harness(XID79, policy=policy())
    label(h.cluster, "canary")
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service)
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert (status["cordon"], status["taint"]) == ("succeeded", "succeeded")
    assert not await quarantined(h)  # recorded as what it would do: nothing changed
    assert not h.notifier.of("ask_approval")  # a drain is "done" as observed, never asked
    text = h.notifier.text()
    assert "Pool: canary (observe): label gpubot.io/pool=canary matched" in text
    assert "Would: cordon gpu-node-07" in text
    events = await h.store.events(run_id=run.id)
    assert {e.step for e in events if e.kind == "step.observed"} >= {"cordon", "taint", "drain"}
    mutating = {"node.cordon", "node.taint", "node.drain", "gpu.reset", "node.uncordon"}
    assert not [e for e in events if e.kind == "step.started" and e.action in mutating]


async def test_quarantine_runs_the_safe_steps_and_offers_nothing_destructive(
    harness: MakeHarness,
) -> None:
    h = harness(XID79, policy=policy())
    label(h.cluster, "training")
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service)
    [run] = await h.store.list_runs()
    status = await h.step_status(run.id)
    assert (status["cordon"], status["taint"], status["drain"]) == (
        "succeeded",
        "succeeded",
        "skipped",
    )
    assert await quarantined(h)
    assert not h.notifier.of("ask_approval")
    assert "Not offered: pool training (quarantine)" in h.notifier.text()
    assert (await h.run_of(run.id)).status.value == "succeeded"


async def test_a_node_relabelled_mid_incident_follows_its_new_pool_from_the_next_step(
    harness: MakeHarness,
) -> None:
    """Planned in `inference` (remediate): the run quarantines and asks for the drain. The
    node is relabelled `training` before anyone approves; the approved drain still runs
    (decided already), and the reset that follows is not offered: quarantine mode."""
    h = harness(XID79, policy=policy())
    label(h.cluster, "inference")
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service)
    [run] = await h.store.list_runs()
    assert (await h.step_status(run.id))["drain"] == "waiting_approval"
    label(h.cluster, "training")
    [ask] = h.notifier.of("ask_approval")
    await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    await h.service.wait_idle()
    status = await h.step_status(run.id)
    assert status["drain"] == "succeeded"
    assert status["reset"] == "skipped"
    text = h.notifier.text()
    assert "The node moved from pool inference to pool training (quarantine)" in text
    assert "this run follows training" in text


async def test_without_pools_nothing_changes(harness: MakeHarness) -> None:
    """No pools and the default mode remediate: no pool line, no node read for it."""
    h = harness(XID79)
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service)
    [run] = await h.store.list_runs()
    assert (await h.step_status(run.id))["drain"] == "waiting_approval"
    assert "Pool: default (remediate): no pool matched" in h.notifier.text()


async def test_the_policy_digest_is_audited_when_it_changes(harness: MakeHarness) -> None:
    """Each start records policy.loaded only when the digest is not the one last recorded."""
    from dataclasses import replace

    h = harness(XID79, policy=replace(policy(), digest="aaaa"))
    await h.service.background.record_policy()
    await h.service.background.record_policy()  # the same policy again: nothing new in the trail
    changed = GpubotService(replace(h.service.e, policy=replace(policy(), digest="bbbb")))
    await changed.background.record_policy()
    loaded = [e for e in await h.store.events() if e.kind == "policy.loaded"]
    assert [(e.result["digest"], e.result["previous"]) for e in loaded] == [
        ("aaaa", None),
        ("bbbb", "aaaa"),
    ]
    assert [p["name"] for p in loaded[-1].result["pools"]] == ["canary", "training", "inference"]


async def test_a_pool_names_who_approves_its_nodes(harness: MakeHarness) -> None:
    """The inference pool's drains are approved by its own group: the request names it, a
    member of the runbook's group is refused, and the pool's member is counted."""
    from dataclasses import replace

    serving = ApproverGroup("serving", users=frozenset({"U7"}))
    pools = (replace(POOLS[2], approvers={"required": "serving"}),)
    h = harness(XID79, policy=Policy(groups={"oncall": ONCALL, "serving": serving}, pools=pools))
    label(h.cluster, "inference")
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service)
    [run] = await h.store.list_runs()
    [ask] = h.notifier.of("ask_approval")
    request = await h.store.get_approval(ask.approval_id)
    assert request.group == "serving"
    with pytest.raises(ApprovalError, match="not in the approver group 'serving'"):
        await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    assert (await h.store.get_approval(ask.approval_id)).status.value == "pending"
    await h.service.vote(approval_id=ask.approval_id, user="U7", decision="approve")
    await h.service.wait_idle()
    assert (await h.step_status(run.id))["drain"] == "succeeded"


def test_a_pool_approver_group_must_exist(tmp_path: Path) -> None:
    from gpubot.config import load_settings
    from gpubot.errors import ConfigError

    config = tmp_path / "gpubot.yaml"
    config.write_text(
        "policy: {pools: [{name: a, match: {x: y}, approvers: {required: nobody}}]}\n"
    )
    with pytest.raises(ConfigError, match=r"'nobody' is not a group of policy\.groups"):
        load_settings(config)


def test_a_maintenance_window_reads_as_an_sre_writes_it() -> None:
    weekend = parse_window("sat,sun 02:00-06:00")
    assert str(weekend) == "sat,sun 02:00-06:00 UTC"
    assert weekend.contains(datetime(2026, 11, 28, 3, 0, tzinfo=UTC))  # a Saturday
    assert not weekend.contains(datetime(2026, 11, 28, 6, 0, tzinfo=UTC))
    assert not weekend.contains(datetime(2026, 11, 27, 3, 0, tzinfo=UTC))  # a Friday
    nightly = parse_window("22:00-04:00")  # past midnight
    assert nightly.contains(datetime(2026, 11, 27, 23, 0, tzinfo=UTC))
    assert nightly.contains(datetime(2026, 11, 28, 3, 59, tzinfo=UTC))
    assert not nightly.contains(datetime(2026, 11, 28, 12, 0, tzinfo=UTC))
    friday_night = parse_window("fri 22:00-04:00")  # its morning part is Saturday's
    assert friday_night.contains(datetime(2026, 11, 28, 1, 0, tzinfo=UTC))
    assert not friday_night.contains(datetime(2026, 11, 29, 1, 0, tzinfo=UTC))
    for bad in (
        "02:00",
        "sat 2-6",
        "someday 02:00-06:00",
        "25:00-26:00",
        "02:00-02:00",
        "٠٢:00-06:00",
    ):
        with pytest.raises(ValueError, match="window"):
            parse_window(bad)


async def test_outside_its_window_an_approved_drain_waits_then_runs(harness: MakeHarness) -> None:
    """The inference pool drains only 02:00-06:00 UTC. At noon the quarantine runs and the
    drain is asked and approved, then waits (held, said once); at 02:00 the next look runs it."""
    from dataclasses import replace

    from gpubot.engine.clock import FakeClock

    clock = FakeClock(datetime(2026, 11, 27, 12, 0, tzinfo=UTC))
    pools = (replace(POOLS[2], window=parse_window("02:00-06:00")),)
    h = harness(XID79, policy=Policy(groups={"oncall": ONCALL}, pools=pools), clock=clock)
    label(h.cluster, "inference")
    inject_xid(h.cluster, node=NODE, gpu=3)
    await deliver(h.service)
    [run] = await h.store.list_runs()
    assert await quarantined(h)
    [ask] = h.notifier.of("ask_approval")
    await h.service.vote(approval_id=ask.approval_id, user="U1", decision="approve")
    await h.service.wait_idle()
    assert (await h.step_status(run.id))["drain"] == "held"
    assert "outside the maintenance window of pool inference (daily 02:00-06:00 UTC)" in (
        h.notifier.text()
    )
    await h.service.background.tick()
    await h.service.wait_idle()
    assert h.notifier.text().count("Step drain waits") == 1
    assert (await h.step_status(run.id))["drain"] == "held"
    clock.advance(timedelta(hours=14))  # 02:00 the next day
    await h.service.background.tick()
    await h.service.wait_idle()
    assert (await h.step_status(run.id))["drain"] == "succeeded"

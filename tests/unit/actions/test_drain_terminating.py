"""node.drain waits for terminating pods and never evicts them again; pods that stay
terminating (the kubelet is gone, as on a node hung after XID 79) end the wait with a clear
message after a bound, or are force-deleted where the runbook allows it (fake clock)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from gpubot.backends.simulated.scenarios import stop_kubelet
from gpubot.engine.clock import FakeClock

MakeHarness = Any  # the `harness` fixture in conftest.py
NODE = "gpu-node-12"  # a notebook and a vLLM sandbox, no PDB

DRAIN = """
name: drain
triggers: [{command: drain}]
params: {node: {type: node}}
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}"%s}
    approval: auto
    timeout: %s
"""


class Calls:
    """Counts the drain's calls to the cluster, per kind and per pod."""

    def __init__(self, cluster: Any) -> None:
        self.evictions: Counter[str] = Counter()  # eviction requests
        self.accepted: Counter[str] = Counter()  # those the API accepted (not a PDB's 429)
        self.lists = 0
        self.deletes: list[tuple[str, int | None]] = []
        evict, list_pods, delete = cluster.evict, cluster.list_pods, cluster.delete_pod

        async def counting_evict(*, namespace: str, name: str, **kw: Any) -> None:
            self.evictions[f"{namespace}/{name}"] += 1
            await evict(namespace=namespace, name=name, **kw)
            self.accepted[f"{namespace}/{name}"] += 1

        async def counting_list(**kw: Any) -> Any:
            self.lists += 1
            return await list_pods(**kw)

        async def counting_delete(*, namespace: str, name: str, grace_seconds: int | None) -> None:
            self.deletes.append((f"{namespace}/{name}", grace_seconds))
            await delete(namespace=namespace, name=name, grace_seconds=grace_seconds)

        cluster.evict, cluster.list_pods, cluster.delete_pod = (
            counting_evict,
            counting_list,
            counting_delete,
        )


async def _drain(h: Any, node: str = NODE) -> tuple[Any, Any]:
    _plan, run = await h.service.start_command_run(
        runbook="drain", args={"node": node}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    _, drain = await h.store.steps(run.id)
    return await h.store.get_run(run.id), drain


async def _evictable(h: Any, node: str = NODE) -> list[Any]:
    return [p for p in await h.cluster.kube.list_pods(node=node) if not p.is_daemonset]


async def test_pods_that_stay_terminating_are_evicted_once_and_handed_to_a_human(
    harness: MakeHarness,
) -> None:
    h = harness(DRAIN % ("", "10m"))
    stop_kubelet(h.cluster, node=NODE)
    pods = {p.ref for p in await _evictable(h)}
    assert pods
    calls = Calls(h.cluster.kube)
    run, drain = await _drain(h)

    # Each pod evicted exactly once, however long the wait.
    assert dict(calls.evictions) == dict.fromkeys(pods, 1)
    assert run.status.value == "needs_human"
    assert drain.status.value == "needs_human"
    assert f"{len(pods)} pod(s) still terminating after 5m" in drain.error
    assert f"the kubelet on {NODE} may be gone" in drain.error
    # Bounded poll with backoff: 1 s doubling to 30 s, over the 5-minute bound.
    assert h.clock.slept[:6] == [1, 2, 4, 8, 16, 30]
    assert set(h.clock.slept[5:]) == {30}
    assert 300 <= sum(h.clock.slept) < 340
    # One LIST per look (a few per minute), besides the plan's two and the first round's.
    assert calls.lists <= 4 + len(h.clock.slept)
    assert not calls.deletes  # nothing forced without the runbook's say-so
    assert len(h.notifier.text()) < 4000  # the thread stayed short


async def test_the_runbook_may_force_delete_pods_stuck_terminating(
    harness: MakeHarness,
) -> None:
    h = harness(
        DRAIN % (", force_delete_terminating: true, terminating_timeout_seconds: 120", "10m")
    )
    stop_kubelet(h.cluster, node=NODE)
    pods = {p.ref for p in await _evictable(h)}
    calls = Calls(h.cluster.kube)
    run, drain = await _drain(h)

    assert run.status.value == "succeeded"
    assert drain.status.value == "succeeded"
    assert dict(calls.evictions) == dict.fromkeys(pods, 1)
    assert sorted(calls.deletes) == sorted((ref, 0) for ref in pods)
    assert sorted(drain.output["evicted"]) == sorted(pods)
    assert sorted(drain.output["deleted"]) == sorted(pods)
    assert 120 <= sum(h.clock.slept) < 160
    assert await _evictable(h) == []
    assert "force-deleted" in h.notifier.text()


class KubeletBackClock(FakeClock):
    """The kubelet comes back (and finishes the terminating pods) after `after` seconds."""

    def __init__(self, cluster_ref: list[Any], after: float) -> None:
        super().__init__()
        self.cluster_ref, self.after = cluster_ref, after

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds)
        if sum(self.slept) >= self.after and self.cluster_ref:
            cluster = self.cluster_ref.pop()
            with cluster.mutation() as state:
                state.node(NODE).kubelet = True
                state.pods = [p for p in state.pods if not p.deletion_timestamp]


async def test_terminating_pods_that_finish_end_the_drain(harness: MakeHarness) -> None:
    ref: list[Any] = []
    h = harness(DRAIN % ("", "10m"), clock=KubeletBackClock(ref, after=40))
    ref.append(h.cluster)
    stop_kubelet(h.cluster, node=NODE)
    pods = {p.ref for p in await _evictable(h)}
    calls = Calls(h.cluster.kube)
    run, drain = await _drain(h)

    assert run.status.value == "succeeded"
    assert dict(calls.evictions) == dict.fromkeys(pods, 1)
    assert sorted(drain.output["evicted"]) == sorted(pods)
    assert drain.output["deleted"] == []
    assert sum(h.clock.slept) < 40 + 30


async def test_a_step_timeout_before_the_bound_says_the_same(harness: MakeHarness) -> None:
    h = harness(DRAIN % ("", "2m"))
    stop_kubelet(h.cluster, node=NODE)
    calls = Calls(h.cluster.kube)
    run, drain = await _drain(h)

    assert run.status.value == "needs_human"
    assert "still terminating at the step timeout" in drain.error
    assert f"the kubelet on {NODE} may be gone" in drain.error
    assert set(calls.evictions.values()) == {1}
    assert sum(h.clock.slept) <= timedelta(minutes=2).total_seconds()


async def test_a_drain_with_a_kubelet_empties_the_node_at_once(harness: MakeHarness) -> None:
    h = harness(DRAIN % ("", "10m"))
    pods = {p.ref for p in await _evictable(h)}
    calls = Calls(h.cluster.kube)
    run, _drain_step = await _drain(h)

    assert run.status.value == "succeeded"
    assert dict(calls.evictions) == dict.fromkeys(pods, 1)
    assert h.clock.slept == []
    # The plan's two (cordon, drain), the round that evicts, one look that finds it empty.
    assert calls.lists == 4


async def test_a_pdb_blocked_pod_beside_stuck_ones_is_asked_again_only_on_the_backoff(
    harness: MakeHarness,
) -> None:
    """gpu-node-07 holds two llm-chat pods under a PDB that allows one disruption: the first
    goes terminating, its replacement waits Pending, so the PDB refuses the second until the
    bound. The 429s are retried a few times a minute, never in a loop."""
    node = "gpu-node-07"
    h = harness(DRAIN % ("", "10m"))
    stop_kubelet(h.cluster, node=node)
    calls = Calls(h.cluster.kube)
    run, drain = await _drain(h, node)

    assert set(calls.accepted.values()) == {1}
    minutes = sum(h.clock.slept) / 60
    assert max(calls.evictions.values()) <= 3 * minutes
    assert run.status.value == "needs_human"
    terminating = [p.ref for p in await _evictable(h, node) if p.terminating]
    assert set(terminating) == set(calls.accepted)
    assert f"{len(terminating)} pod(s) still terminating after 5m" in drain.error


async def test_the_plan_says_which_pods_are_already_terminating(harness: MakeHarness) -> None:
    h = harness(DRAIN % ("", "10m"))
    stop_kubelet(h.cluster, node=NODE)
    [first, *_] = await _evictable(h)
    await h.cluster.kube.evict(namespace=first.namespace, name=first.name)
    plan = await h.service.plan(runbook="drain", args={"node": NODE}, cluster="sim")
    drain = next(s for s in plan.steps if s.id == "drain")
    assert f"wait for 1 already terminating ({first.ref})" in drain.summary
    assert f"evict 1 pod(s) from {NODE}" in drain.summary

"""The oom-triage runbook on the simulated cluster reads every source the incident has: where
the pod's log alone cannot tell why the process died, the node's kernel log decides, and the
verdict names the sources that agreed and those that were missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpubot.backends.simulated.scenarios import child_oom_kill, oom_kill
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.knowledge.oom.triage import classify

MakeHarness = Any  # the `harness` fixture in conftest.py
ROOT = Path(__file__).parents[3]
RUNBOOKS = [(ROOT / "runbooks" / "oom-triage.yaml").read_text()]
POD = ("ml-train", "llama3-70b-pretrain-0")


def _alert_without_reason() -> AlertmanagerPayload:
    """A PodOOMKilled alert whose rule gives no reason label (a restart-count rule, say)."""
    body = json.loads((ROOT / "tests/fixtures/alertmanager/pod_oomkilled_firing.json").read_text())
    del body["alerts"][0]["labels"]["reason"]
    return AlertmanagerPayload.model_validate(body)


async def _triage(h: Any) -> dict[str, Any]:
    summary = await h.service.ingest(_alert_without_reason())
    await h.service.process(summary)
    await h.service.wait_idle()
    [run] = await h.store.list_runs()
    [step] = await h.store.steps(run.id)
    return dict(step.output)


async def test_the_node_kernel_log_decides_where_the_log_alone_cannot_tell(
    harness: MakeHarness,
) -> None:
    h = harness(*RUNBOOKS)
    last = child_oom_kill(h.cluster, namespace=POD[0], pod=POD[1])
    # The pod's own log and status: a child got SIGKILL, the launcher exited 1. Alone, that
    # is a SIGKILL of unknown cause.
    assert classify(str(last["message"]), exit_code=1, reason="Error").cls == "killed_unknown"
    out = await _triage(h)
    assert (out["class"], out["family"], out["confidence"]) == (
        "host_oom_killed",
        "kernel_oom_killer_for_pod",
        "high",
    )
    assert any("Memory cgroup out of memory: Killed process 4242" in e for e in out["evidence"])
    status = {s["source"]: s["status"] for s in out["sources"]}
    assert status["kernel_log"] == "decides"
    assert status["log"] == "agrees"
    assert "kernel_log" in out["sources_agreed"]
    # The simulated Prometheus has no cAdvisor series: that source is named as missing.
    assert "memory_working_set" in out["sources_missing"]
    thread = h.notifier.text()
    assert "Class: host_oom_killed" in thread
    assert "sources agreeing: log, kernel_log" in thread
    assert "missing: memory_working_set" in thread
    assert any("limit" in a for a in out["advice"]), "host-memory advice, not how to find out"


async def test_a_kernel_oom_of_another_pod_decides_nothing(harness: MakeHarness) -> None:
    h = harness(*RUNBOOKS)
    child_oom_kill(h.cluster, namespace=POD[0], pod=POD[1])
    with h.cluster.mutation() as state:
        # The same OOM report, charged to another pod's cgroup on the same node.
        pod = state.pod(*POD)
        node = state.node(pod.node)
        ours, theirs = pod.uid.replace("-", "_"), "0" * 8 + "_1111_2222_3333_" + "4" * 12
        node.kernel_log = [line.replace(ours, theirs) for line in node.kernel_log]
    out = await _triage(h)
    assert out["class"] == "killed_unknown"
    assert {s["source"]: s["status"] for s in out["sources"]}["kernel_log"] == "silent"


async def test_a_cuda_oom_reports_its_sources_and_the_gpu_that_was_full(
    harness: MakeHarness,
) -> None:
    h = harness(*RUNBOOKS)
    oom_kill(h.cluster, namespace=POD[0], pod=POD[1], kind="cuda")
    out = await _triage(h)
    assert out["class"] == "cuda_oom"
    status = {s["source"]: s["status"] for s in out["sources"]}
    assert status["kernel_log"] == "silent"
    assert status["gpu_memory"] == "agrees"

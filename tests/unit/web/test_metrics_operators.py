"""/metrics for the operator: the build and the process, how long steps and approvals take
(histograms whose counts and sums move with a simulated XID 79 run on the fake clock), finished
runs by runbook, and failed calls counted per dependency."""

from __future__ import annotations

import platform
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_metrics_state import GPU, NODE, XID79, Bot, MakeBot, Samples, make_bot, xid_for

from gpubot import __version__
from gpubot.backends.simulated import SimulatedCluster, simulated_state
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.control.audit import AuditDraft
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.clock import FakeClock
from gpubot.engine.counted_ports import counted_clusters
from gpubot.errors import NotFoundError, TemporaryStepError
from gpubot.web.metrics import OutboxReading, Watched, WebMetrics

__all__ = ["make_bot"]  # the fixture, used by name


def sample(m: Samples, name: str, **labels: str) -> float:
    return m[(name, tuple(sorted(labels.items())))]


def fail_once(target: object, method: str, error: Exception) -> list[int]:
    """`target.method` raises `error` on its next call, then works again; the list counts
    the calls it failed."""
    real: Callable[..., Any] = getattr(target, method)
    failed: list[int] = []

    async def once(*args: Any, **kwargs: Any) -> Any:
        if not failed:
            failed.append(1)
            raise error
        return await real(*args, **kwargs)

    setattr(target, method, once)
    return failed


async def xid79_waiting_for_drain(bot: Bot) -> str:
    """An XID 79 alert whose run waits for the drain's approval; the request's id."""
    inject_xid(simulated_state(bot.app.clusters["sim"]), node=NODE, gpu=GPU)
    assert (await bot.post(XID79)).status_code == 200
    (run,) = await bot.app.store.list_runs()
    (request,) = await bot.app.store.approvals_for(run.id)
    return request.id


async def test_the_build_and_the_process_are_exported(make_bot: MakeBot) -> None:
    """gpubot_build_info is 1 with this version and Python; the process_* and python_* series
    of prometheus_client's collectors are in the bot's own registry."""
    bot = await make_bot()

    m = await bot.metrics()

    build = {"version": __version__, "python": platform.python_version()}
    assert sample(m, "gpubot_build_info", **build) == 1
    assert sample(m, "process_cpu_seconds_total") > 0
    assert sample(m, "process_resident_memory_bytes") > 0
    assert sample(m, "process_start_time_seconds") > 0
    assert sample(m, "python_info", **_python_labels()) == 1
    assert sample(m, "python_gc_collections_total", generation="0") >= 0


def _python_labels() -> dict[str, str]:
    major, minor, patch = platform.python_version_tuple()
    return {
        "implementation": platform.python_implementation(),
        "major": major,
        "minor": minor,
        "patchlevel": patch,
        "version": platform.python_version(),
    }


async def test_an_approved_drain_moves_the_step_and_approval_histograms(
    make_bot: MakeBot,
) -> None:
    """XID 79: cordon and taint end at once (counted in the lowest bucket); the drain is
    approved 7 minutes after it was asked (latency sum 420 s); its first pod listing fails with
    an API server 503 and it retries 30 s later on the fake clock, so its duration is 30 s
    (in the 30 s bucket, not the 15 s one) and the Kubernetes API's error counter is 1."""
    bot = await make_bot()
    approval = await xid79_waiting_for_drain(bot)
    before = await bot.metrics()
    run = {"runbook": "xid79"}
    step = {**run, "outcome": "succeeded"}
    assert sample(before, "gpubot_step_duration_seconds_count", action="node.cordon", **step) == 1
    assert sample(before, "gpubot_step_duration_seconds_count", action="node.taint", **step) == 1
    cordon_fast = {"action": "node.cordon", "le": "0.1", **step}
    assert sample(before, "gpubot_step_duration_seconds_bucket", **cordon_fast) == 1
    assert ("gpubot_approval_latency_seconds_count", ()) not in before
    assert sample(before, "gpubot_dependency_errors_total", dependency="kubernetes") == 0

    kube = bot.app.clusters["sim"].kube
    failed = fail_once(kube, "list_pods", TemporaryStepError("API server 503", delay=30))
    bot.clock.advance(timedelta(minutes=7))
    await bot.app.service.vote(approval_id=approval, user="U1", decision="approve")
    await bot.app.service.wait_idle()
    m = await bot.metrics()

    assert failed == [1]
    decided = {**run, "decision": "approved"}
    assert sample(m, "gpubot_approval_latency_seconds_count", **decided) == 1
    assert sample(m, "gpubot_approval_latency_seconds_sum", **decided) == 7 * 60
    assert sample(m, "gpubot_approval_latency_seconds_bucket", le="300.0", **decided) == 0
    assert sample(m, "gpubot_approval_latency_seconds_bucket", le="600.0", **decided) == 1
    drain = {"action": "node.drain", **step}
    assert sample(m, "gpubot_step_duration_seconds_count", **drain) == 1
    assert sample(m, "gpubot_step_duration_seconds_sum", **drain) == 30
    assert sample(m, "gpubot_step_duration_seconds_bucket", le="15.0", **drain) == 0
    assert sample(m, "gpubot_step_duration_seconds_bucket", le="30.0", **drain) == 1
    assert sample(m, "gpubot_dependency_errors_total", dependency="kubernetes") == 1
    for other in ("slurm", "agent", "prometheus", "audit", "slack"):
        assert sample(m, "gpubot_dependency_errors_total", dependency=other) == 0


async def test_a_denied_and_an_expired_request_are_timed_by_decision(
    make_bot: MakeBot,
) -> None:
    """A deny 2 minutes after the request: decision denied, 120 s; the run is counted as a
    cancelled xid79 run. A second incident's request left past the 30-minute expiry: decision
    expired, timed to its expiry (1,800 s), not to when the tick noticed it."""
    bot = await make_bot()
    approval = await xid79_waiting_for_drain(bot)
    bot.clock.advance(timedelta(minutes=2))
    await bot.app.service.vote(approval_id=approval, user="U1", decision="deny")
    await bot.app.service.wait_idle()
    m = await bot.metrics()

    denied = {"runbook": "xid79", "decision": "denied"}
    assert sample(m, "gpubot_approval_latency_seconds_count", **denied) == 1
    assert sample(m, "gpubot_approval_latency_seconds_sum", **denied) == 120
    assert sample(m, "gpubot_runs_finished_total", runbook="xid79", status="cancelled") == 1
    assert sample(m, "gpubot_runs_finished_total", runbook="xid79", status="succeeded") == 0

    inject_xid(simulated_state(bot.app.clusters["sim"]), node="gpu-node-08", gpu=GPU)
    assert (await bot.post(xid_for("gpu-node-08"))).status_code == 200
    bot.clock.advance(timedelta(minutes=45))
    await bot.app.service.background.tick()
    await bot.app.service.wait_idle()
    m = await bot.metrics()

    expired = {"runbook": "xid79", "decision": "expired"}
    assert sample(m, "gpubot_approval_latency_seconds_count", **expired) == 1
    assert sample(m, "gpubot_approval_latency_seconds_sum", **expired) == 30 * 60
    assert sample(m, "gpubot_approval_latency_seconds_count", **denied) == 1


async def test_failed_agent_and_prometheus_calls_are_counted_but_answers_are_not(
    make_bot: MakeBot,
) -> None:
    """A node agent that times out and a Prometheus that refuses, called through the engine's
    cluster ports, count one error each; a not-found is the API's answer and counts none."""
    bot = await make_bot()
    ports = bot.app.service.e.clusters["sim"]
    sim = bot.app.clusters["sim"]
    fail_once(sim.agent, "gpus", TemporaryStepError("node agent timed out"))
    fail_once(sim.metrics, "query", TemporaryStepError("Prometheus refused"))
    fail_once(sim.kube, "get_node", NotFoundError("nodes/gone not found"))

    with pytest.raises(TemporaryStepError):
        await ports.agent.gpus(node=NODE)
    with pytest.raises(TemporaryStepError):
        await ports.metrics.query(promql="up")
    with pytest.raises(NotFoundError):
        await ports.nodes.get_node(node="gone")
    assert await ports.agent.gpus(node=NODE)  # the next call works, and counts nothing
    m = await bot.metrics()

    assert sample(m, "gpubot_dependency_errors_total", dependency="agent") == 1
    assert sample(m, "gpubot_dependency_errors_total", dependency="prometheus") == 1
    assert sample(m, "gpubot_dependency_errors_total", dependency="kubernetes") == 0


async def test_a_slurm_clusters_failed_calls_count_as_slurm_not_kubernetes() -> None:
    """A cluster configured with the Slurm backend: its API's failures are `slurm` errors."""
    metrics = WebMetrics()
    sim = SimulatedCluster.default(name="lab")
    clusters = counted_clusters({"lab": sim.ports()}, metrics, slurm=frozenset({"lab"}))
    fail_once(sim.kube, "set_unschedulable", TemporaryStepError("scontrol timed out"))

    with pytest.raises(TemporaryStepError):
        await clusters["lab"].nodes.set_unschedulable(node=NODE, value=True)
    errors = metrics.state.dependency_errors

    assert errors["slurm"] == 1
    assert errors["kubernetes"] == 0


class _BrokenLog:
    async def append(self, draft: AuditDraft) -> None:
        raise OSError("disk full")


async def test_a_failed_audit_append_and_slack_errors_count_as_dependency_errors() -> None:
    """An audit append that raises counts one `audit` error and still raises; the Slack
    outbox's failed Web API calls (every kind) are the `slack` errors."""
    metrics = WebMetrics()
    clock = FakeClock(datetime(2026, 11, 22, tzinfo=UTC))
    trail = AuditTrail(_BrokenLog(), clock, metrics)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="disk full"):
        await trail.record("policy.loaded", actor="gpubot")
    errors = {"rate_limited": 2, "server_error": 1, "client_error": 1}
    metrics.watch(Watched(outbox=lambda: OutboxReading(pending=0, errors=errors)))

    families = {f.name: f for f in metrics.registry.collect()}
    counts = {s.labels["dependency"]: s.value for s in families["gpubot_dependency_errors"].samples}

    assert counts["audit"] == 1
    assert counts["slack"] == 4
    assert counts["kubernetes"] == 0

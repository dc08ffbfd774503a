"""An engine whose cluster is the real client against an API server; GPUs from a fake agent."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from kube_cluster import Cluster
from kubernetes import client
from waiting import LIMIT_S

from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import H100_MEMORY_MIB, H100_NAME, SimulatedCluster
from gpubot.backends.store import SqlStore
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.safety_caps import AttemptCap, BlastRadius, Policy
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.gpus.evidence import EvidencePart
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.loader import load_file
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.clock import SystemClock
from gpubot.engine.deps import Engine
from gpubot.engine.registry import builtin_registry
from gpubot.engine.service import GpubotService
from gpubot.errors import PermanentStepError
from gpubot.knowledge.dcgm_diag import DiagReport, TestResult
from gpubot.ports import ClusterPorts, Leadership

REPO = Path(__file__).parents[3]
XID79_PAYLOAD = REPO / "tests" / "fixtures" / "alertmanager" / "xid79_firing.json"
ONCALL = ApproverGroup("oncall", users=frozenset({"U1", "U2"}), usergroups=frozenset())


@dataclass
class FakeAgent:
    """The NodeAgent port: 8 GPUs per node; `lose()` drops one off the bus."""

    lost: set[tuple[str, int]] = field(default_factory=set)
    reset_fails: bool = False
    resets: list[tuple[str, int]] = field(default_factory=list)
    # DCGM diagnostics: (node, gpu) → (test, message) that fails; every other test passes.
    diag_failures: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    diags: list[tuple[str, int]] = field(default_factory=list)

    def lose(self, node: str, gpu: int) -> None:
        self.lost.add((node, gpu))

    async def gpus(self, *, node: str) -> list[GpuState]:
        return [
            GpuState(
                index=i,
                uuid=f"GPU-{node}-{i}",
                name=H100_NAME,
                memory_total_mib=H100_MEMORY_MIB,
                lost=(node, i) in self.lost,
                xid_errors=(79,) if (node, i) in self.lost else (),
            )
            for i in range(8)
        ]

    async def set_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        return (await self.gpus(node=node))[gpu]

    async def reset_gpu(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        self.resets.append((node, gpu))
        if self.reset_fails:
            return (await self.gpus(node=node))[gpu]
        self.lost.discard((node, gpu))
        return (await self.gpus(node=node))[gpu]

    async def diag_status(self, *, node: str) -> str | None:
        return None  # DCGM answers on every node

    async def gather_evidence(self, *, node: str) -> list[EvidencePart]:
        """What an agent without NVIDIA's tools answers: each part said missing."""
        return [
            EvidencePart(name, "missing", b"", "not installed")
            for name in ("nvidia-bug-report.log.gz", "nvidia-smi-q.xml", "kernel-nvrm.log")
        ]

    async def diag(self, *, node: str, level: int, gpus: Sequence[int] | None = None) -> DiagReport:
        self.diags.append((node, level))
        results = []
        for gpu in gpus or range(8):
            test, message = self.diag_failures.get((node, gpu), ("", ""))
            results.append(TestResult("software", "pass", gpu, "Deployment"))
            if test:
                results.append(TestResult(test, "fail", gpu, "Hardware", (message,)))
        return DiagReport(level=level, results=tuple(results), version="4.2.3")


@dataclass
class KubeBot:
    service: GpubotService
    store: SqlStore
    notifier: RecordingNotifier
    kube: KubernetesKubeApi
    agent: FakeAgent

    async def deliver(self, payload: AlertmanagerPayload) -> None:
        summary = await self.service.ingest(payload)
        await self.service.process(summary)
        await self.service.wait_idle()

    async def approve_pending(self, run_id: str, user: str = "U1") -> str | None:
        """Approve the run's open request, if any; returns its step id."""
        for request in await self.store.approvals_for(run_id):
            if request.status.value == "pending":
                await self.service.vote(approval_id=request.id, user=user, decision="approve")
                return request.step_id
        return None

    async def wait_status(self, run_id: str, *statuses: RunStatus, limit: float = LIMIT_S) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while loop.time() < deadline:
            run = await self.store.get_run(run_id)
            if run.status in statuses:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"run {run_id} stayed {run.status.value}: {run.note}")


# One automatic cordon of the node named on the command: the smallest runbook that counts
# against the blast-radius cap.
CORDON_ONLY = """
name: cordon-only
description: cordon a node
triggers: [{command: cordon-only}]
params: {node: {type: node}}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
"""


def make_bot(
    api_client: client.ApiClient,
    store: SqlStore,
    *,
    agent: FakeAgent | None = None,
    blast: BlastRadius | None = None,
    leadership: Leadership | None = None,
    runbooks: tuple[Path, ...] = (REPO / "runbooks" / "xid79.yaml",),
    **engine: Any,
) -> KubeBot:
    """`engine`: more of the Engine's fields (shared_caps and identity for a sharded replica)."""
    kube = KubernetesKubeApi(api_client)
    agent = agent or FakeAgent()
    metrics = SimulatedCluster()  # no Prometheus in these tests
    built = Engine(
        store=store,
        registry=builtin_registry(),
        runbooks={(rb := load_file(p).runbook).name: rb for p in runbooks},
        clusters={"sim": ClusterPorts("sim", kube, agent, metrics)},
        notifier=(notifier := RecordingNotifier()),
        clock=SystemClock(),
        policy=Policy(
            groups={"oncall": ONCALL},
            blast=blast or BlastRadius(max_cordoned_count=4, max_cordoned_fraction=0.5),
            attempts=AttemptCap(max_attempts=3, window=timedelta(hours=24)),
        ),
    )
    if leadership is not None:
        engine["leadership"] = leadership
    return KubeBot(GpubotService(replace(built, **engine)), store, notifier, kube, agent)


def cluster_bot(c: Cluster, store: SqlStore, *, token: str | None = None, **kw: Any) -> KubeBot:
    """make_bot on the real API server, through a client that records into `c.calls` (as the
    admin, or as `token`); its adapter, and any watch it keeps open, is closed with the test's
    objects: an open watch would hold up the API server's shutdown."""
    bot = make_bot(c.client(token), store, **kw)
    c.finalizers.append(bot.kube.close)
    return bot


def xid_payload(nodes: list[str]) -> AlertmanagerPayload:
    """One webhook body with an XID 79 alert per node (as a grouped Alertmanager send)."""
    data = json.loads(XID79_PAYLOAD.read_text())
    template = data["alerts"][0]
    alerts = []
    for i, node in enumerate(nodes):
        alert = copy.deepcopy(template)
        alert["labels"]["Hostname"] = node
        alert["fingerprint"] = f"{i:016x}"
        alerts.append(alert)
    data["alerts"] = alerts
    return AlertmanagerPayload.model_validate(data)


__all__ = [
    "CORDON_ONLY",
    "FakeAgent",
    "KubeBot",
    "PermanentStepError",
    "cluster_bot",
    "make_bot",
    "xid_payload",
]

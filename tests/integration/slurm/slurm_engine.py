"""An engine whose cluster is Slurm through the real commands; GPUs from the simulated agent."""

from __future__ import annotations

import asyncio
import copy
import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from slurm_cluster import GPUS_PER_NODE, SlurmCluster
from waiting import LIMIT_S

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import H100_MEMORY_MIB, H100_NAME, SimulatedCluster
from gpubot.backends.simulated.state import ClusterState, SimNode
from gpubot.backends.slurm import SlurmCommands, SlurmKubeApi
from gpubot.backends.slurm.joblog import JobOutput
from gpubot.backends.store import SqlStore
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.safety_caps import AttemptCap, BlastRadius, Policy
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.loader import load_file
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.clock import SystemClock
from gpubot.engine.deps import Engine
from gpubot.engine.registry import builtin_registry
from gpubot.engine.service import GpubotService
from gpubot.ports import ClusterPorts

REPO = Path(__file__).parents[3]
XID79_PAYLOAD = REPO / "tests" / "fixtures" / "alertmanager" / "xid79_firing.json"
ONCALL = ApproverGroup("oncall", users=frozenset({"U1", "U2"}), usergroups=frozenset())
CLUSTER = "hpc"


def gpu_uuid(node: str, index: int) -> str:
    return f"GPU-{node}-{index:04d}"


def agent_cluster(nodes: tuple[str, ...], *, state_path: Path | None = None) -> SimulatedCluster:
    """The simulated agent's side: the Slurm nodes' GPUs (4 H100 each), nothing else."""
    state = ClusterState()
    for name in nodes:
        gpus = [
            GpuState(
                index=i,
                uuid=gpu_uuid(name, i),
                name=H100_NAME,
                memory_total_mib=H100_MEMORY_MIB,
                pci_bus_id=f"0000:{0x18 + 0x10 * i:02x}:00.0",
            )
            for i in range(GPUS_PER_NODE)
        ]
        state.nodes[name] = SimNode(name=name, labels={}, gpus=gpus)
    return SimulatedCluster(state, name=CLUSTER, state_path=state_path)


@dataclass
class SlurmBot:
    service: GpubotService
    store: SqlStore
    notifier: RecordingNotifier
    slurm: SlurmKubeApi
    gpus: SimulatedCluster

    async def deliver(self, payload: AlertmanagerPayload) -> None:
        summary = await self.service.ingest(payload)
        await self.service.process(summary)
        await self.service.wait_idle()

    async def pending(self, run_id: str) -> str | None:
        for request in await self.store.approvals_for(run_id):
            if request.status.value == "pending":
                return request.step_id
        return None

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
            await asyncio.sleep(0.1)
        raise AssertionError(f"run {run_id} stayed {run.status.value}: {run.note}")


def make_bot(
    slurm: SlurmCluster, store: SqlStore, *runbooks: str, api: SlurmKubeApi | None = None
) -> SlurmBot:
    """`api`: the cluster's Slurm ports, if not the real commands' over `slurm`'s daemons."""
    api = api or SlurmKubeApi(
        SlurmCommands(conf=slurm.conf, timeout_seconds=20),
        job_output=JobOutput(roots=(slurm.root / "out",)),
    )
    gpus = agent_cluster(slurm.nodes)
    engine = Engine(
        store=store,
        registry=builtin_registry(),
        runbooks={
            (rb := load_file(REPO / "runbooks" / f"{name}.yaml").runbook).name: rb
            for name in runbooks or ("xid79",)
        },
        clusters={CLUSTER: ClusterPorts(CLUSTER, api, gpus.agent, gpus.metrics)},
        notifier=(notifier := RecordingNotifier()),
        clock=SystemClock(),
        policy=Policy(
            groups={"oncall": ONCALL},
            blast=BlastRadius(max_cordoned_count=4, max_cordoned_fraction=1.0),
            attempts=AttemptCap(max_attempts=3, window=timedelta(hours=24)),
        ),
    )
    return SlurmBot(GpubotService(engine), store, notifier, api, gpus)


def xid_payload(node: str, gpu: int) -> AlertmanagerPayload:
    """The captured Alertmanager body, its alert about `node`'s GPU `gpu` in cluster hpc."""
    return AlertmanagerPayload.model_validate(xid_body(node, gpu))


def xid_body(node: str, gpu: int) -> dict[str, Any]:
    """xid_payload's JSON, as Alertmanager posts it."""
    data: dict[str, Any] = json.loads(XID79_PAYLOAD.read_text())
    alert = copy.deepcopy(data["alerts"][0])
    alert["labels"].update(
        Hostname=node,
        gpu=str(gpu),
        UUID=gpu_uuid(node, gpu),
        cluster=CLUSTER,
        device=f"nvidia{gpu}",
    )
    data["alerts"] = [alert]
    for key in ("groupLabels", "commonLabels"):
        data[key]["cluster"] = CLUSTER
    data["commonLabels"].update(Hostname=node, gpu=str(gpu), UUID=gpu_uuid(node, gpu))
    return data

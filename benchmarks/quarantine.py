"""XID 79 alert in → node cordoned (the xid79 runbook's auto step): p50/p99 latency.

Prints one JSON line. Two paths, each with its baseline measured in the same run:

- in_process: the real web app (POST /alertmanager through httpx's ASGI transport, no
  socket) and build_app's service on the simulated cluster, SQLite in a temporary directory.
- kube_standin: the same service, its cluster the official kubernetes client against the
  Kubernetes API stand-in from tests/ (loopback HTTP, served from a thread of this process);
  GPU reads from the tests' fake node agent.

A sample runs from the POST to the moment the real cordon call (not the plan's dry-run)
returns. The baseline is one bare cordon call through the same KubeApi. After each sample
the alert resolves and the node is put back, so every sample starts from a healthy cluster
with one lost GPU; samples cycle over the 16 nodes. The attempt cap (3 runs per node a day)
is raised for the benchmark, as it would otherwise stop the 4th sample on a node.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import io
import json
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from _report import REPO, at_most, emit, percentiles, use_test_helpers

from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid, recover_node
from gpubot.config import load_settings
from gpubot.domain.fleet.cluster import Taint
from gpubot.ports import ClusterPorts, KubeApi
from gpubot.web.app import create_app
from gpubot.wiring import build_app

NODES = [f"gpu-node-{i:02d}" for i in range(1, 17)]
GPU = 3
XID_TAINT = Taint(key="gpubot.io/xid", value="79", effect="NoSchedule")
TEMPLATE = json.loads((REPO / "gpubot" / "demo" / "xid79_firing.json").read_text())


def warm_up(n: int) -> int:
    """Samples run first and not counted (first imports, compiled statements): 3, fewer for
    a tiny run."""
    return min(3, max(1, n // 10))


class TimedKube:
    """A KubeApi that notes when a real cordon (value=True, not a dry-run) has returned."""

    def __init__(self, inner: KubeApi) -> None:
        self.inner = inner
        self.cordoned = asyncio.Event()
        self.at = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def set_unschedulable(self, **kw: Any) -> None:
        await self.inner.set_unschedulable(**kw)
        if kw.get("value") and not kw.get("dry_run"):
            self.at = time.perf_counter()
            self.cordoned.set()


class Sink(io.StringIO):
    """Console output (no Slack here) that goes nowhere: the benchmark measures the service."""

    def write(self, text: str) -> int:
        return len(text)


def body(sample: int, node: str, *, status: str = "firing") -> bytes:
    data = copy.deepcopy(TEMPLATE)
    alert = data["alerts"][0]
    starts = datetime.fromisoformat(alert["startsAt"]) + timedelta(seconds=sample)
    alert["labels"]["Hostname"] = node
    alert["fingerprint"] = f"{sample:016x}"
    alert["startsAt"] = starts.isoformat()
    alert["status"] = data["status"] = status
    if status == "resolved":
        alert["endsAt"] = (starts + timedelta(minutes=1)).isoformat()
    return json.dumps(data).encode()


Fault = Callable[[str], None]


async def xid_to_cordon(
    ports: ClusterPorts, timed: TimedKube, *, lose: Fault, heal: Fault, n: int, store: str
) -> tuple[list[float], list[float]]:
    """(POST → cordoned, POST → 2xx) for n samples after the warm-up."""
    settings = load_settings(
        None,
        store={"url": store},
        slack={"mode": "off"},
        policy={"attempts": {"max_attempts": 1_000_000}},
    )
    app = build_app(settings, clusters={"sim": ports}, out=Sink())
    transport = httpx.ASGITransport(app=create_app(app.service))
    cordon: list[float] = []
    ack: list[float] = []
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for sample in range(n + warm_up(n)):
                node = NODES[sample % len(NODES)]
                lose(node)
                timed.cordoned.clear()
                started = time.perf_counter()
                reply = await post(client, body(sample, node))
                acked = time.perf_counter()
                await asyncio.wait_for(timed.cordoned.wait(), timeout=30)
                if sample >= warm_up(n):
                    cordon.append(timed.at - started)
                    ack.append(acked - started)
                assert reply.json().get("opened") == 1, reply.text
                await app.service.wait_idle()  # quarantined; the drain waits for approval
                await post(client, body(sample, node, status="resolved"))
                await app.service.wait_idle()
                await put_back(timed.inner, node)
                heal(node)
    finally:
        await app.aclose()
    return cordon, ack


async def post(client: httpx.AsyncClient, content: bytes) -> httpx.Response:
    reply = await client.post(
        "/alertmanager", content=content, headers={"content-type": "application/json"}
    )
    if reply.status_code != 200:
        raise RuntimeError(f"HTTP {reply.status_code}: {reply.text}")
    return reply


async def put_back(kube: KubeApi, node: str) -> None:
    await kube.set_unschedulable(node=node, value=False, actor="bench", reason="reset")
    await kube.set_taint(node=node, taint=XID_TAINT, present=False)


async def bare_cordon(kube: KubeApi, n: int) -> list[float]:
    """The baseline: the cordon call alone, through the same KubeApi."""
    samples = []
    for sample in range(n + warm_up(n)):
        node = NODES[sample % len(NODES)]
        started = time.perf_counter()
        await kube.set_unschedulable(node=node, value=True, actor="bench", reason="baseline")
        if sample >= warm_up(n):
            samples.append(time.perf_counter() - started)
        await kube.set_unschedulable(node=node, value=False, actor="bench", reason="reset")
    return samples


def lose_gpu(sim: SimulatedCluster, node: str) -> None:
    inject_xid(sim, node=node, gpu=GPU, xid=79)


def heal_gpus(sim: SimulatedCluster, node: str) -> None:
    recover_node(sim, node=node)


async def in_process(n: int, tmp: Path) -> dict[str, Any]:
    sim = SimulatedCluster.default()
    timed = TimedKube(sim.kube)
    ports = ClusterPorts("sim", timed, sim.agent, sim.metrics)  # type: ignore[arg-type]
    cordon, ack = await xid_to_cordon(
        ports,
        timed,
        lose=lambda node: lose_gpu(sim, node),
        heal=lambda node: heal_gpus(sim, node),
        n=n,
        store=f"sqlite:///{tmp}/in-process.db",
    )
    return {
        "xid_to_cordon": percentiles(cordon),
        "xid_to_2xx": percentiles(ack),
        "baseline_bare_cordon": percentiles(await bare_cordon(sim.kube, n)),
    }


@contextlib.asynccontextmanager
async def kube_cluster() -> AsyncIterator[tuple[Any, Any, Any]]:
    use_test_helpers("integration/kube")
    from kube_engine import FakeAgent
    from kube_standin import KubeStandin, client_for, serve

    from gpubot.backends.kube import KubernetesKubeApi

    with serve(KubeStandin()) as standin:
        for node in NODES:
            standin.add_node(node)
            for i in range(2):  # a training pod and an inference pod on every node
                standin.add_pod(
                    "ml", f"{node}-w{i}", node=node, gpus=4, owner=("ReplicaSet", f"{node}-rs{i}")
                )
        api = KubernetesKubeApi(client_for(standin))
        try:
            yield standin, api, FakeAgent()
        finally:
            api.close()


async def through_standin(n: int, tmp: Path) -> dict[str, Any]:
    async with kube_cluster() as (_standin, api, agent):
        timed = TimedKube(api)
        ports = ClusterPorts("sim", timed, agent, SimulatedCluster().metrics)  # type: ignore[arg-type]
        cordon, ack = await xid_to_cordon(
            ports,
            timed,
            lose=lambda node: agent.lose(node, GPU),
            heal=lambda node: agent.lost.discard((node, GPU)),
            n=n,
            store=f"sqlite:///{tmp}/kube.db",
        )
        return {
            "xid_to_cordon": percentiles(cordon),
            "xid_to_2xx": percentiles(ack),
            "baseline_bare_cordon": percentiles(await bare_cordon(api, n)),
        }


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gpubot-bench-") as tmp:
        local = await in_process(n, Path(tmp))
        remote = await through_standin(n, Path(tmp))
    emit(
        "quarantine",
        samples=n,
        in_process=local,
        kube_standin=remote,
        targets={"in_process_p99_ms": at_most(local["xid_to_cordon"]["p99_ms"], 50.0)},
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="samples per path (default 200)")
    asyncio.run(main(parser.parse_args().n))

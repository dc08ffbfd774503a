"""XID 79 on every node at once: the cordoned share of the fleet never passes the cap, not
even for a moment, and held quarantines go ahead only as capacity returns."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kube_engine import FakeAgent, xid_payload
from kube_engine import make_bot as make_kube_bot
from kube_standin import KubeStandin, client_for, serve

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import open_store
from gpubot.config import load_settings
from gpubot.domain.control.safety_caps import BlastRadius
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.engine.clock import FakeClock
from gpubot.ports import ClusterPorts
from gpubot.web.app import create_app
from gpubot.wiring import build_app

FIXTURE = Path(__file__).parents[1] / "fixtures" / "alertmanager" / "xid79_firing.json"
CAP = 4  # policy defaults: 4 nodes or 25% of the fleet, whichever is fewer


class WatchedKube:
    """The simulated cluster, with the number of cordoned nodes read after every change."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self.sim = sim
        self.samples: list[int] = []

    async def cordoned(self) -> int:
        return sum(1 for n in await self.sim.kube.list_nodes() if n.unschedulable)

    async def set_unschedulable(self, **kw: Any) -> None:
        await self.sim.kube.set_unschedulable(**kw)
        self.samples.append(await self.cordoned())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sim.kube, name)


def storm_body(nodes: list[str]) -> bytes:
    """One grouped webhook body: XID 79 on GPU 0 of every node."""
    doc = json.loads(FIXTURE.read_text())
    template = doc["alerts"][0]
    alerts = []
    for i, node in enumerate(nodes):
        alert = copy.deepcopy(template)
        alert["labels"].update(Hostname=node, gpu="0")
        alert["fingerprint"] = f"{i + 1:016x}"
        alerts.append(alert)
    doc["alerts"] = alerts
    return json.dumps(doc).encode()


async def test_every_node_at_once_never_passes_the_cordon_cap(tmp_path: Path) -> None:
    """16 XID 79 alerts in one webhook, 16 runs racing to quarantine: after every cordon,
    and in a sampler running beside them, at most 4 nodes are cordoned; exactly 4 are, the
    other 12 runs are held, told in one summary. When a person returns a node to
    service, the next tick lets one held run quarantine its node, and the cap still holds."""
    sim = SimulatedCluster.default()
    nodes = sim.node_names()
    assert len(nodes) == 16
    for node in nodes:
        inject_xid(sim, node=node, gpu=0)
    watched = WatchedKube(sim)
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path / 'blast.db'}"},
        slack={"mode": "off"},
        policy={"groups": {"oncall": {"users": ["U1"]}}},
    )
    notifier = RecordingNotifier()
    app = build_app(
        settings,
        clusters={"sim": ClusterPorts("sim", watched, sim.agent, sim.metrics)},  # type: ignore[arg-type]
        notifier=notifier,
        clock=FakeClock(),
    )
    web = create_app(app.service)
    sampled: list[int] = []
    done = asyncio.Event()

    async def sampler() -> None:
        while not done.is_set():
            sampled.append(await watched.cordoned())
            await asyncio.sleep(0.001)

    watcher = asyncio.create_task(sampler())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://b") as c:
        reply = await c.post(
            "/alertmanager", content=storm_body(nodes), headers={"content-type": "application/json"}
        )
        assert reply.status_code == 200
        await app.service.wait_idle()
    done.set()
    await watcher

    assert len(sampled) > 16  # the sampler really ran while the runs did
    assert max(watched.samples) <= CAP
    assert max(sampled) <= CAP
    assert await watched.cordoned() == CAP
    runs = await app.store.list_runs()
    assert len(runs) == 16
    held = [r for r in runs if r.status is RunStatus.HELD]
    assert len(held) == 16 - CAP
    assert all("blast radius" in r.note for r in held)
    # One summary for the storm, not a message per held step.
    assert "is held" not in notifier.text()
    summary = notifier.of("summary")[-1]
    assert summary.text.startswith(f"Blast radius: {16 - CAP} step(s) held")

    # A person releases one quarantined node: capacity for exactly one more.
    released = next(n.name for n in await sim.kube.list_nodes() if n.unschedulable)
    await sim.kube.set_unschedulable(node=released, value=False, actor="U1", reason="repaired")
    await app.service.background.tick()
    await app.service.wait_idle()
    assert max(watched.samples) <= CAP
    assert await watched.cordoned() == CAP
    still_held = [r for r in await app.store.list_runs() if r.status is RunStatus.HELD]
    assert len(still_held) == 16 - CAP - 1
    assert notifier.of("summary")[-1].text.startswith(f"Blast radius: {16 - CAP - 1} step(s)")
    await app.aclose()


# Every call through the official client costs ~40 ms here (it deserializes each Node),
# so this fleet is small; the 16-node test above is the storm, this one the real client.
KUBE_NODES, KUBE_CAP = 6, 2


@pytest.fixture
def standin() -> Iterator[KubeStandin]:
    with serve(KubeStandin()) as s:
        for n in range(1, KUBE_NODES + 1):
            s.add_node(f"node-{n:02d}")
        yield s


async def test_every_node_through_the_kubernetes_api_never_passes_the_cap(
    tmp_path: Path, standin: KubeStandin
) -> None:
    """Every node behind the Kubernetes API stand-in (the real client) reports XID 79 at
    once: a thread reading the API server's own state the whole time never sees more than
    the cap cordoned, and exactly the cap is cordoned at the end; the rest are held."""
    names = [f"node-{n:02d}" for n in range(1, KUBE_NODES + 1)]
    agent = FakeAgent()
    for name in names:
        agent.lose(name, 0)
    store = open_store(f"sqlite:///{tmp_path / 'kube.db'}")
    bot = make_kube_bot(
        client_for(standin),
        store,
        agent=agent,
        blast=BlastRadius(max_cordoned_count=KUBE_CAP, max_cordoned_fraction=0.5),
    )
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            with standin.lock:
                seen.append(
                    sum(1 for n in standin.nodes.values() if n["spec"].get("unschedulable"))
                )
            stop.wait(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        await bot.deliver(xid_payload(names))
    finally:
        stop.set()
        sampler.join(timeout=5)
        bot.kube.close()
    assert len(seen) > 10
    assert max(seen) <= KUBE_CAP
    assert sum(1 for n in standin.nodes.values() if n["spec"].get("unschedulable")) == KUBE_CAP
    runs = await store.list_runs()
    assert len(runs) == KUBE_NODES
    assert sum(1 for r in runs if r.status is RunStatus.HELD) == KUBE_NODES - KUBE_CAP
    await store.close()

"""The fleet benchmark's storm executed by 1, 2 and 3 `gpubot serve` replicas side by side.

Each count gets a new PostgreSQL schema and its own `gpubot serve` processes (started and
stopped by PID), with `leader_election.shards` set so each replica executes the shards it
holds a Lease on, and the request budget (`kube_qps`, `kube_burst`) divided between them so
that together they never send more than one replica may. Once the shards are spread, the
storm's single-alert webhooks go to the replicas in turn (as a Service spreads them), 16 in
flight, until every node is cordoned; the nodes are then uncordoned for the next count.

Before the storm, single alerts one at a time, to the replicas in turn, each timed from its
POST until its node is cordoned: by whether the replica that took the webhook holds the
node's shard (it runs the step itself) or another does (it acts on word of the run through
PostgreSQL's notifications, or at its next one-second look without them).

Reported per count: nodes/s, nodes cordoned per replica (by which replica holds the node's
shard) and per second per replica, the replicas' CPU per cordoned node (from /proc), the
single alerts' time to cordon, and the steps started more than once (from the audit trail:
`step.started` per run and step), which must be 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from _report import percentiles
from kubernetes import client

from gpubot.domain.runbooks.shards import shard_of

SHARDS = 6
# The replicas' cordon cap: room for the single alerts' cordons beside the storm's half of
# the fleet (a replica's cap counts the cordons its runs hold, not only the live ones).
CAP_FRACTION = 0.6
NAMESPACE = "gpubot-bench"
GROUP = "gpubot-leader"


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _holders(coordination: Any) -> dict[int, str]:
    """Shard → the identity holding its Lease now."""
    leases = coordination.list_namespaced_lease(
        NAMESPACE, label_selector=f"gpubot.io/lease-group={GROUP},gpubot.io/lease-role=shard"
    )
    found: dict[int, str] = {}
    for lease in leases.items:
        holder = lease.spec.holder_identity if lease.spec else None
        if holder:
            # <group>-shard-<i>-of-<count>
            found[int(lease.metadata.name.rsplit("-shard-", 1)[1].split("-")[0])] = holder
    return found


def _cordoned(admin: Any, nodes: set[str]) -> int:
    raw = admin.list_node(field_selector="spec.unschedulable=true", _preload_content=False)
    items = json.loads(raw.data)["items"]
    return sum(1 for item in items if item["metadata"]["name"] in nodes)


async def _storm(urls: list[str], bodies: list[bytes], admin: Any, nodes: set[str]) -> float:
    """Post `bodies` to `urls` in turn, 16 in flight; seconds until every node is cordoned."""
    gate = asyncio.Semaphore(16)
    errors: Counter[int] = Counter()
    async with httpx.AsyncClient(timeout=120) as web:

        async def send(i: int, body: bytes) -> None:
            async with gate:
                reply = await web.post(
                    f"{urls[i % len(urls)]}/alertmanager",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                if reply.status_code != 200:
                    errors[reply.status_code] += 1

        first = time.perf_counter()
        await asyncio.gather(*(send(i, b) for i, b in enumerate(bodies)))
        while await asyncio.to_thread(_cordoned, admin, nodes) < len(nodes):
            if time.perf_counter() - first > 900:
                raise TimeoutError("the replicas' cordons did not all land")
            await asyncio.sleep(0.2)
        if errors:
            raise RuntimeError(f"webhooks refused: {dict(errors)}")
        return time.perf_counter() - first


def _is_cordoned(admin: Any, node: str) -> bool:
    raw = admin.read_node(node, _preload_content=False)
    return bool((json.loads(raw.data).get("spec") or {}).get("unschedulable"))


def _probe(
    urls: list[str], probes: list[tuple[str, bytes]], admin: Any, holders: dict[int, str]
) -> dict[str, Any]:
    """Each probe's alert to the next replica, alone; seconds until its node is cordoned,
    split by whether that replica holds the node's shard."""
    own: list[float] = []
    other: list[float] = []
    with httpx.Client(timeout=30) as web:
        for i, (node, body) in enumerate(probes):
            k = i % len(urls)
            began = time.perf_counter()
            reply = web.post(
                f"{urls[k]}/alertmanager",
                content=body,
                headers={"content-type": "application/json"},
            )
            if reply.status_code != 200:
                raise RuntimeError(f"webhook refused: {reply.status_code}")
            while not _is_cordoned(admin, node):
                if time.perf_counter() - began > 30:
                    raise TimeoutError(f"{node} was not cordoned")
                time.sleep(0.002)
            taken = time.perf_counter() - began
            owner = holders.get(shard_of(f"sim/{node}", SHARDS))
            (own if owner == f"replica-{k}" else other).append(taken)
    return {
        "all": percentiles(own + other) if own or other else None,
        "taken_by_the_shards_holder": percentiles(own) if own else None,
        "taken_by_another_replica": percentiles(other) if other else None,
    }


def _started_twice(schema: Any) -> tuple[int, int]:
    """(steps started, steps started more than once) in the schema's audit trail."""

    async def read() -> tuple[int, int]:
        store = schema.open()
        try:
            events = await store.events(kinds=["step.started"])
        finally:
            await store.close()
        counts = Counter((e.run_id, e.step) for e in events)
        return len(counts), sum(1 for c in counts.values() if c > 1)

    return asyncio.run(read())


def run_count(
    n: int,
    *,
    plane: Any,
    admin: Any,
    nodes: list[str],
    bodies: list[bytes],
    probes: list[tuple[str, bytes]],
    runbooks: Path,
    tmp: Path,
    qps: float,
    burst: int,
) -> dict[str, Any]:
    """The storm over `n` replicas; the nodes are uncordoned again before this returns."""
    from reliability_procs import Procs, answers, clean_env, free_port, pg_schema, write_config

    schema = pg_schema()
    procs = Procs()
    coordination = client.CoordinationV1Api(admin.api_client)
    kubeconfig = plane.kubeconfig_for(tmp / f"kubeconfig-{n}", token=plane.token)
    urls: list[str] = []
    try:
        for k in range(n):
            folder = tmp / f"replicas-{n}" / f"replica-{k}"
            folder.mkdir(parents=True)
            config = write_config(
                folder / "gpubot.yaml",
                store={"url": schema.url},
                runbooks={"dirs": [str(runbooks)], "builtin": False},
                clusters=[
                    {
                        "name": "sim",
                        "backend": "kubernetes",
                        "context": "lab",
                        "kubeconfig": str(kubeconfig),
                        "kube_qps": qps / n,
                        "kube_burst": max(1, burst // n),
                        "agent": {"port": 9400},  # the runbook never calls an agent
                    }
                ],
                leader_election={
                    "enabled": True,
                    "namespace": NAMESPACE,
                    "identity": f"replica-{k}",
                    "shards": SHARDS,
                    "lease_seconds": 15,
                    "renew_seconds": 1,
                },
                policy={
                    "blast_radius": {
                        "max_cordoned_fraction": CAP_FRACTION,
                        "max_cordoned_count": 1_000_000,
                    },
                    "attempts": {"max_attempts": 1_000_000},
                },
            )
            port = free_port()
            procs.spawn(
                [
                    sys.executable,
                    "-m",
                    "gpubot.cli",
                    "serve",
                    "--config",
                    str(config),
                    "--port",
                    str(port),
                ],
                log=folder / "serve.log",
                cwd=folder,
                env=clean_env(),
            )
            urls.append(f"http://127.0.0.1:{port}")
        began = time.monotonic()
        fair = -(-SHARDS // n)
        while not (
            all(answers(f"{u}/readyz") for u in urls)
            and len(holders := _holders(coordination)) == SHARDS
            and max(Counter(holders.values()).values()) <= fair
            and len(set(holders.values())) == n
        ):
            if time.monotonic() - began > 120:
                raise TimeoutError(f"{n} replicas did not spread the shards\n{procs.tail()}")
            time.sleep(0.2)
        singles = _probe(urls, probes, admin, _holders(coordination))
        # Back in service before the storm, which alone may fill the cordon cap (50 %).
        for node, _ in probes:
            admin.patch_node(node, {"spec": {"unschedulable": None}}, _preload_content=False)
        pids = [p.pid for p in procs.started]
        cpu = [_cpu_seconds(pid) for pid in pids]
        seconds = asyncio.run(_storm(urls, bodies, admin, set(nodes)))
        used = sum(_cpu_seconds(pid) for pid in pids) - sum(cpu)
        holders = _holders(coordination)
        by_replica = Counter(holders.get(shard_of(f"sim/{node}", SHARDS), "?") for node in nodes)
        started, twice = _started_twice(schema)
    finally:
        procs.stop()
        schema.drop()
        for node in [*nodes, *(node for node, _ in probes)]:
            admin.patch_node(node, {"spec": {"unschedulable": None}}, _preload_content=False)
    rate = len(nodes) / seconds
    return {
        "replicas": n,
        "shards": SHARDS,
        "nodes": len(nodes),
        "first_alert_to_last_cordon_s": round(seconds, 2),
        "cordon_nodes_per_s": round(rate, 1),
        "cordon_nodes_per_s_per_replica": round(rate / n, 1),
        "cordoned_by_replica": dict(sorted(by_replica.items())),
        "gpubot_cpu_ms_per_cordoned_node": round(used * 1000 / len(nodes), 2),
        "single_alert_to_cordon": singles,
        "steps_started": started,
        "steps_started_twice": twice,
    }

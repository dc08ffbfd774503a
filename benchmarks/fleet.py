"""Fleet scale on a real API server: an XID storm's cordons, single alerts, and a big drain.

Prints one JSON line. A real control plane on loopback (etcd, kube-apiserver and the
disruption controller, started by tests/integration/kube/control_plane.py and stopped by PID)
holds `--nodes` GPU Nodes (1,500). gpubot runs in this process: the real web app (POST
/alertmanager handed to it as an ASGI server would), build_app's service with SQLite in a temporary
directory, and KubernetesKubeApi on the official client, paced at `--qps`/`--burst`. The one
runbook cordons the node an XID alert names; the cap is 50 % of the fleet.

1. Single alerts: `--singles` XID alerts one at a time, each from its POST to the moment the
   cordon PATCH has returned (the node is cordoned in etcd); the node is put back after each.
   Baseline, same run: the cordon PATCH alone, and one LIST of every Node, decoded (what the
   blast-radius check cost per cordon before the watch cache).
2. Storm: XID alerts for `--storm` nodes (750), sent as Alertmanager groups them (payloads of
   10, 8 in flight): time from the first POST to the last node cordoned, nodes/s, and each
   alert's POST-to-cordon time (which includes waiting behind the rest of the storm).
   Baseline: NVSentinel's published figures (2.5 nodes/s, 750 nodes in 304 s, P99 0.50 s).
3. Drain: `--drain-nodes` (100) of the cordoned nodes with `--pods` (15) Running pods each, one
   PodDisruptionBudget per node's pods (maxUnavailable 5, so evictions also meet real 429s), a
   stand-in kubelet deleting evicted pods: node.drain on 10 nodes at a time. Time, and the
   eviction requests per second (PDB refusals included).

Every request gpubot sends is counted by status: the line says how many 5xx and 429s there
were, and the busiest 1 s of requests against what the token bucket allows.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import logging
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _asgi import AsgiPoster
from _report import REPO, at_least, at_most, emit, percentiles, use_test_helpers
from _xid_cordon import RUNBOOK, Sink
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from gpubot.actions.base import ActionContext
from gpubot.actions.drain import DrainParams, run_drain
from gpubot.backends.kube import KubernetesKubeApi
from gpubot.backends.kube.connect import configuration_for
from gpubot.config import load_settings
from gpubot.engine.clock import SystemClock
from gpubot.ports import ClusterPorts
from gpubot.web.app import create_app
from gpubot.wiring import build_app

TEMPLATE = json.loads((REPO / "gpubot" / "demo" / "xid79_firing.json").read_text())
NVSENTINEL = {
    "cordon_nodes_per_s": 2.5,
    "nodes": 750,
    "seconds": 304,
    "event_to_cordon_p99_ms": 500,
}
PER_PAYLOAD, IN_FLIGHT = 10, 8
REPLICA_PROBES = 20  # single alerts, one at a time, over each replica count
DRAINS_AT_ONCE = 10


def note(text: str) -> None:
    """Progress on stderr (the JSON line alone goes to stdout)."""
    print(f"fleet: {text}", file=sys.stderr, flush=True)


class CountingApiClient(client.ApiClient):
    """Notes (time, method, path, status) of every request gpubot's client sends."""

    def __init__(self, configuration: client.Configuration) -> None:
        super().__init__(configuration)
        self.log: list[tuple[float, str, str, int]] = []

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        status = 200
        try:
            return super().call_api(method, url, *args, **kwargs)
        except ApiException as exc:
            status = int(exc.status or 0)
            raise
        finally:
            self.log.append((time.perf_counter(), method, url, status))

    def observe(self, method: str, url: str, status: int) -> None:
        """A request sent through the adapter's aiohttp transport (not call_api)."""
        self.log.append((time.perf_counter(), method, url, status))


class TimedKube(KubernetesKubeApi):
    """Notes when each real cordon (not a dry-run) has returned, and every eviction."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.cordoned: dict[str, float] = {}
        self.evictions: list[tuple[float, str]] = []
        self.events_posted: list[float] = []
        self.changed = asyncio.Event()

    async def _create_event(self, body: dict[str, Any]) -> None:
        await super()._create_event(body)
        self.events_posted.append(time.perf_counter())

    async def set_unschedulable(self, **kw: Any) -> None:
        await super().set_unschedulable(**kw)
        if kw.get("value") and not kw.get("dry_run"):
            self.cordoned[kw["node"]] = time.perf_counter()
            self.changed.set()

    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        try:
            await super().evict(namespace=namespace, name=name, grace_seconds=grace_seconds)
            self.evictions.append((time.perf_counter(), "evicted"))
        except Exception:
            self.evictions.append((time.perf_counter(), "refused"))
            raise


class NoAgent:
    """The runbook reads no GPU and no metric."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the fleet benchmark does not use {name}")


def configuration(plane: Any) -> client.Configuration:
    """What `gpubot serve` makes of the control plane's kubeconfig."""
    return configuration_for(cluster="bench", kubeconfig=Path(plane.kubeconfig))


def node_body(name: str) -> dict[str, Any]:
    gpu = {"nvidia.com/gpu": "8"}
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "H100"},
        },
        "status": {
            "capacity": {"cpu": "96", "memory": "2Ti", "pods": "110", **gpu},
            "allocatable": {"cpu": "95", "memory": "2000Gi", "pods": "110", **gpu},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def parallel(work: list[Callable[[], Any]], threads: int = 16) -> None:
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(w) for w in work]:
            future.result()


def uncordon(admin: Any, nodes: list[str]) -> None:
    """Put the nodes back in service, 16 at a time."""
    parallel(
        [
            lambda n=n: admin.patch_node(
                n, {"spec": {"unschedulable": None}}, _preload_content=False
            )
            for n in nodes
        ]
    )


def alert(node: str, serial: int) -> dict[str, Any]:
    item = copy.deepcopy(TEMPLATE["alerts"][0])
    item["labels"]["Hostname"] = node
    item["fingerprint"] = f"{serial:016x}"
    return item


def payload(alerts: list[dict[str, Any]], *, status: str = "firing") -> bytes:
    body = copy.deepcopy(TEMPLATE)
    for a in alerts:
        a["status"] = status
        if status == "resolved":
            a["endsAt"] = datetime.now(UTC).isoformat()
    body["alerts"] = alerts
    body["status"] = status
    return json.dumps(body).encode()


async def post(web: AsgiPoster, content: bytes) -> None:
    status, reply = await web.post("/alertmanager", content)
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {reply.decode(errors='replace')}")


async def until(check: Callable[[], bool], event: asyncio.Event, limit: float) -> None:
    deadline = time.perf_counter() + limit
    while not check():
        event.clear()
        if check():
            return
        left = deadline - time.perf_counter()
        if left <= 0:
            raise TimeoutError("the cordons did not all land")
        try:
            await asyncio.wait_for(event.wait(), timeout=left)
        except TimeoutError:
            continue


# -- phases ---------------------------------------------------------------------------------


async def singles(
    app: Any, web: AsgiPoster, kube: TimedKube, admin: Any, nodes: list[str]
) -> list[float]:
    taken: list[float] = []
    for i, node in enumerate(nodes):
        alerts = [alert(node, 1_000_000 + i)]
        started = time.perf_counter()
        await post(web, payload(alerts))
        await until(lambda n=node: n in kube.cordoned, kube.changed, 30)
        taken.append(kube.cordoned.pop(node) - started)
        await app.service.wait_idle()
        await post(web, payload([alert(node, 1_000_000 + i)], status="resolved"))
        await app.service.wait_idle()
        admin.patch_node(node, {"spec": {"unschedulable": None}}, _preload_content=False)
    return taken


async def storm(
    app: Any,
    web: AsgiPoster,
    kube: TimedKube,
    nodes: list[str],
    *,
    per_payload: int = PER_PAYLOAD,
    in_flight: int = IN_FLIGHT,
    first_serial: int = 0,
    bare_p50_ms: float | None = None,
) -> dict[str, Any]:
    """XID alerts for `nodes`, `per_payload` to a webhook (1: as Alertmanager sends them when
    its route groups by node), `in_flight` webhooks at a time, until every node is cordoned."""
    kube.cordoned.clear()
    posted: dict[str, float] = {}
    batches = [nodes[i : i + per_payload] for i in range(0, len(nodes), per_payload)]
    gate = asyncio.Semaphore(in_flight)

    # Alertmanager's side, built before the clock starts: its JSON is not gpubot's CPU.
    bodies = [
        payload([alert(n, first_serial + s * per_payload + k) for k, n in enumerate(batch)])
        for s, batch in enumerate(batches)
    ]

    async def send(batch: list[str], body: bytes) -> None:
        async with gate:
            started = time.perf_counter()
            for node in batch:
                posted[node] = started
            await post(web, body)

    first, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(send(b, body) for b, body in zip(batches, bodies, strict=True)))
    intake = time.perf_counter() - first
    await until(lambda: all(n in kube.cordoned for n in nodes), kube.changed, 900)
    last = max(kube.cordoned[n] for n in nodes)
    used = time.process_time() - cpu
    await app.service.wait_idle()  # and the node Events, which go after the cordons
    events = [t for t in kube.events_posted if t >= first]
    seconds = last - first
    per_node_ms = seconds * 1000 / len(nodes)
    return {
        "alerts_per_webhook": per_payload,
        "webhooks_in_flight": in_flight,
        "nodes": len(nodes),
        "ms_per_cordoned_node": round(per_node_ms, 2),
        # Against the API server's own cost: the bare cordon PATCH's p50 in the same run.
        "per_node_over_bare_patch_p50": round(per_node_ms / bare_p50_ms, 2)
        if bare_p50_ms
        else None,
        "gpubot_cpu_ms_per_cordoned_node": round(used * 1000 / len(nodes), 2),
        "first_alert_to_last_cordon_s": round(seconds, 2),
        # The node Events ("cordoned by gpubot") are queued off the step's path.
        "node_events_posted": len(events),
        "first_alert_to_last_node_event_s": round(max(events, default=first) - first, 2),
        "cordon_nodes_per_s": round(len(nodes) / seconds, 1),
        "intake_s": round(intake, 2),
        # CPU seconds of this process (gpubot, all its threads) per second of the storm.
        "gpubot_cores_busy": round(used / seconds, 2),
        "event_to_cordon": percentiles([kube.cordoned[n] - posted[n] for n in nodes]),
    }


async def bare_storm(kube: TimedKube, nodes: list[str], *, in_flight: int) -> float:
    """Cordon PATCHes alone for `nodes`, `in_flight` at a time: nodes/s."""
    gate = asyncio.Semaphore(in_flight)

    async def cordon(node: str) -> None:
        async with gate:
            await kube.set_unschedulable(node=node, value=True, actor="bench", reason="bare")

    first = time.perf_counter()
    await asyncio.gather(*(cordon(n) for n in nodes))
    seconds = time.perf_counter() - first
    kube.cordoned.clear()
    return round(len(nodes) / seconds, 1)


async def reset_storm(
    app: Any,
    web: AsgiPoster,
    nodes: list[str],
    admin: Any,
    *,
    first_serial: int,
) -> None:
    """Resolve a storm's alerts (their incidents close) and uncordon its nodes, so the next
    storm finds the same nodes healthy and opens incidents of its own."""
    for start in range(0, len(nodes), 100):
        chunk = nodes[start : start + 100]
        resolved = [alert(n, first_serial + start + k) for k, n in enumerate(chunk)]
        await post(web, payload(resolved, status="resolved"))
    await app.service.wait_idle()
    uncordon(admin, nodes)


def add_pods(admin: Any, policy: Any, nodes: list[str], per_node: int) -> list[str]:
    """One namespace per 10 nodes; per node, `per_node` Running, Ready pods and a PDB."""
    namespaces = sorted({f"team-{i // 10:03d}" for i in range(len(nodes))})
    for ns in namespaces:
        admin.create_namespace({"metadata": {"name": ns}}, _preload_content=False)
        admin.create_namespaced_service_account(
            ns, {"metadata": {"name": "default"}}, _preload_content=False
        )
    work: list[Callable[[], Any]] = []
    for i, node in enumerate(nodes):
        ns, app = f"team-{i // 10:03d}", f"job-{node}"
        policy.create_namespaced_pod_disruption_budget(
            ns,
            {
                "metadata": {"name": app},
                # minAvailable, not maxUnavailable: bare pods have no controller to count.
                "spec": {
                    "minAvailable": max(0, per_node - 5),
                    "selector": {"matchLabels": {"app": app}},
                },
            },
            _preload_content=False,
        )
        for k in range(per_node):
            work.append(lambda ns=ns, app=app, node=node, k=k: make_pod(admin, ns, app, node, k))
    parallel(work)
    return namespaces


def budgets_ready(policy: Any, count: int, *, allowed: int, limit: float = 120.0) -> None:
    """Wait until the disruption controller has computed every budget (the Eviction API
    refuses while a budget's status lags its spec)."""
    deadline = time.monotonic() + limit
    while True:
        raw = policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False)
        items = json.loads(raw.data)["items"]
        ready = [b for b in items if (b.get("status") or {}).get("disruptionsAllowed") == allowed]
        if len(ready) >= count:
            return
        if time.monotonic() > deadline:
            sample = [b.get("status") for b in items[:2]]
            raise TimeoutError(f"{len(ready)} of {count} budgets computed: {sample}")
        time.sleep(0.5)


def make_pod(admin: Any, ns: str, app: str, node: str, k: int, *, name: str = "") -> None:
    name = name or f"{app}-{k:02d}"
    admin.create_namespaced_pod(
        ns,
        {
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "trainer:1"}]},
        },
        _preload_content=False,
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    admin.patch_namespaced_pod_status(
        name,
        ns,
        {
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            }
        },
        _preload_content=False,
    )


class Kubelet:
    """Deletes (grace 0) every pod asked to terminate on the drained nodes, as a kubelet
    would once its containers stopped (there is no kubelet here), and starts a Ready
    replacement on a spare node, as the pod's controller and the scheduler would: so each
    budget recovers and the next evictions may go."""

    def __init__(self, admin: Any, nodes: set[str], spares: list[str]) -> None:
        self.admin, self.nodes, self.spares = admin, nodes, spares
        self.serial = itertools.count()
        self.seen: set[str] = set()
        self.stop = threading.Event()
        self.pool = ThreadPoolExecutor(8)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        def pods(**kw: Any) -> Any:  # no return type named: the events stay JSON
            return self.admin.list_pod_for_all_namespaces(**kw)

        w = watch.Watch()
        while not self.stop.is_set():
            try:
                # From the API server's watch cache ("0": every pod first, then changes): a
                # watch from "now" waits for the pod cache to reach etcd's newest version,
                # which it does not while only other kinds change (no etcd progress notify).
                start = w.resource_version or "0"
                for event in w.stream(pods, resource_version=start, timeout_seconds=5):
                    obj = event["object"]
                    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
                    key = f"{meta.get('namespace')}/{meta.get('name')}"
                    on_drained = spec.get("nodeName") in self.nodes
                    if meta.get("deletionTimestamp") and on_drained and key not in self.seen:
                        self.seen.add(key)
                        labels = meta.get("labels") or {}
                        self.pool.submit(self._delete, meta["namespace"], meta["name"], labels)
                    if self.stop.is_set():
                        break
            except Exception as exc:  # a benchmark helper: keep watching
                w = watch.Watch()  # from "0" again
                note(f"kubelet: {exc!r}")
                time.sleep(0.1)

    def _delete(self, ns: str, name: str, labels: dict[str, str]) -> None:
        try:
            self.admin.delete_namespaced_pod(
                name, ns, grace_period_seconds=0, _preload_content=False
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
        n = next(self.serial)
        spare = self.spares[n % len(self.spares)]
        make_pod(self.admin, ns, labels.get("app", "x"), spare, n, name=f"{name}-r")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.pool.shutdown(wait=True)


async def drain(kube: TimedKube, ports: ClusterPorts, nodes: list[str]) -> dict[str, Any]:
    kube.evictions.clear()
    gate = asyncio.Semaphore(DRAINS_AT_ONCE)

    async def one(node: str) -> None:
        async with gate:

            async def say(text: str, mentions: tuple[str, ...]) -> None:
                note(f"drain {node}: {text}")

            ctx = ActionContext(
                cluster=ports, clock=SystemClock(), actor="bench", reason="fleet benchmark", say=say
            )
            await run_drain(ctx, DrainParams(node=node, max_poll_seconds=2.0))

    started = time.perf_counter()
    await asyncio.gather(*(one(n) for n in nodes))
    seconds = time.perf_counter() - started
    evicted = sum(1 for _, what in kube.evictions if what == "evicted")
    return {
        "nodes": len(nodes),
        "seconds": round(seconds, 2),
        "eviction_requests": len(kube.evictions),
        "evicted": evicted,
        "refused_by_pdb": len(kube.evictions) - evicted,
        "eviction_requests_per_s": round(len(kube.evictions) / seconds, 1),
        "drains_at_once": DRAINS_AT_ONCE,
    }


def _resource(path: str) -> str:
    """The resource a request's URL names, without names: "nodes", "events", "pods/eviction"."""
    parts = urlsplit(path).path.strip("/").split("/")
    parts = parts[3:] if parts[:1] == ["apis"] else parts[2:]
    if parts[:1] == ["namespaces"] and len(parts) > 2:
        parts = parts[2:]
    return "/".join(parts[0::2]) or "/"


def traffic(
    log: list[tuple[float, str, str, int]], *, since: float, qps: float, burst: int
) -> dict[str, Any]:
    """Requests since `since`: statuses, and the busiest 1 s window against qps + burst."""
    times = sorted(t for t, *_ in log if t >= since)
    peak, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - 1.0:
            j += 1
        peak = max(peak, i - j + 1)
    statuses = [s for t, _, _, s in log if t >= since]
    kinds = Counter(f"{verb} {_resource(path)}" for t, verb, path, _ in log if t >= since)
    return {
        "requests": len(times),
        "by_kind": dict(kinds.most_common()),
        "server_errors_5xx": sum(1 for s in statuses if s >= 500),
        "throttled_429": sum(1 for s in statuses if s == 429),
        "peak_requests_in_1s": peak,
        "bucket_allows_in_1s": qps + burst,
    }


# -- main -----------------------------------------------------------------------------------


def replica_storms(
    plane: Any,
    admin: Any,
    nodes: list[str],
    *,
    probes: list[str],
    args: argparse.Namespace,
    runbooks: Path,
) -> list[dict[str, Any]]:
    """The single-alert storm over 1, 2 and 3 `gpubot serve` replicas (fleet_replicas.py),
    after the nodes are uncordoned, and before it single alerts for `probes` one at a time;
    [] with --replicas ''."""
    counts = [int(c) for c in args.replicas.split(",") if c.strip()]
    if not counts:
        return []
    import fleet_replicas

    uncordon(admin, nodes)
    admin.create_namespace({"metadata": {"name": fleet_replicas.NAMESPACE}})
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, n in enumerate(counts):
            note(f"storm over {n} replica(s)")
            first = 20_000_000 + i * 1_000_000
            bodies = [payload([alert(node, first + k)]) for k, node in enumerate(nodes)]
            singles = [payload([alert(node, first + 500_000 + k)]) for k, node in enumerate(probes)]
            results.append(
                fleet_replicas.run_count(
                    n,
                    plane=plane,
                    admin=admin,
                    nodes=nodes,
                    bodies=bodies,
                    probes=list(zip(probes, singles, strict=True)),
                    runbooks=runbooks,
                    tmp=Path(tmp),
                    qps=args.qps,
                    burst=args.burst,
                )
            )
            note(f"{n} replica(s): {results[-1]['cordon_nodes_per_s']} nodes/s")
    return results


async def bench(plane: Any, args: argparse.Namespace, tmp: Path) -> None:
    api = CountingApiClient(configuration(plane))
    admin_api = client.ApiClient(configuration(plane))
    admin, policy = client.CoreV1Api(admin_api), client.PolicyV1Api(admin_api)
    names = [f"gpu-{i:04d}" for i in range(args.nodes)]
    parallel([lambda n=n: admin.create_node(node_body(n), _preload_content=False) for n in names])

    note(f"{args.nodes} nodes created")
    kube = TimedKube(api, qps=args.qps, burst=args.burst)
    ports = ClusterPorts("sim", kube, NoAgent(), NoAgent())  # type: ignore[arg-type]
    (tmp / "runbooks").mkdir()
    (tmp / "runbooks" / "xid-cordon.yaml").write_text(RUNBOOK)
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp / 'fleet.db'}"},
        slack={"mode": "off"},
        runbooks={"builtin": False, "dirs": [str(tmp / "runbooks")]},
        policy={
            "blast_radius": {"max_cordoned_fraction": 0.5, "max_cordoned_count": 1_000_000},
            "attempts": {"max_attempts": 1_000_000},
        },
    )
    app = build_app(settings, clusters={"sim": ports}, out=Sink())
    web = AsgiPoster(create_app(app.service))
    storm_nodes = names[: args.storm]
    single_nodes = names[args.storm : args.storm + args.singles]
    try:
        await app.service.background.warm(timeout_s=60)  # as serve does before it listens
        # Baselines: the cordon PATCH alone; one LIST of every Node, decoded.
        bare: list[float] = []
        for node in single_nodes:
            t = time.perf_counter()
            await kube.set_unschedulable(node=node, value=True, actor="bench", reason="bare")
            bare.append(time.perf_counter() - t)
            admin.patch_node(node, {"spec": {"unschedulable": None}}, _preload_content=False)
        # The API server's own limit for this storm's shape: the cordon PATCH alone for every
        # storm node, 16 in flight through the same client, as nodes/s.
        patched = await bare_storm(kube, storm_nodes, in_flight=16)
        uncordon(admin, storm_nodes)
        listed: list[float] = []
        for _ in range(max(3, min(10, args.singles))):
            t = time.perf_counter()
            await kube.list_nodes()
            listed.append(time.perf_counter() - t)
        kube.cordoned.clear()
        note("baselines measured; single alerts")
        one = await singles(app, web, kube, admin, single_nodes)
        bare_p50 = percentiles(bare)["p50_ms"]
        note("storm of single-alert webhooks")
        since = time.perf_counter()
        single_storm = await storm(
            app, web, kube, storm_nodes, per_payload=1, in_flight=16, bare_p50_ms=bare_p50
        )
        single_traffic = traffic(api.log, since=since, qps=args.qps, burst=args.burst)
        note(f"single-alert storm: {single_storm['cordon_nodes_per_s']} nodes/s; resetting")
        await reset_storm(app, web, storm_nodes, admin, first_serial=0)
        note("storm of 10-alert webhooks")
        since = time.perf_counter()
        stormed = await storm(
            app, web, kube, storm_nodes, first_serial=10_000_000, bare_p50_ms=bare_p50
        )
        storm_traffic = traffic(api.log, since=since, qps=args.qps, burst=args.burst)
        drain_nodes = storm_nodes[: args.drain_nodes]
        note(f"storm: {stormed['cordon_nodes_per_s']} nodes/s; pods for the drain")
        add_pods(admin, policy, drain_nodes, args.pods)
        budgets_ready(policy, len(drain_nodes), allowed=min(5, args.pods))
        kubelet = Kubelet(admin, set(drain_nodes), names[args.storm :])
        try:
            note("drain")
            since = time.perf_counter()
            drained = await drain(kube, ports, drain_nodes)
            drain_traffic = traffic(api.log, since=since, qps=args.qps, burst=args.burst)
        finally:
            kubelet.close()
    finally:
        await app.aclose()
        kube.close()
    try:
        # Nodes neither storm touched, for the replicas' single alerts: as many as the
        # replicas' cap leaves room for beside the storm (their runs hold those cordons).
        import fleet_replicas

        room = int(fleet_replicas.CAP_FRACTION * args.nodes) - args.storm
        spare = names[args.storm + args.singles :][: max(0, min(REPLICA_PROBES, room))]
        replicas = await asyncio.to_thread(
            replica_storms,
            plane,
            admin,
            storm_nodes,
            probes=spare,
            args=args,
            runbooks=tmp / "runbooks",
        )
    finally:
        admin_api.close()
    single = percentiles(one)
    emit(
        "fleet",
        fleet={"gpu_nodes": args.nodes, "cap": "50%", "qps": args.qps, "burst": args.burst},
        single_alert={"event_to_cordon": single, "node_lists_by_the_cache": kube.nodes.lists},
        storm=stormed,
        storm_requests=storm_traffic,
        single_alert_storm=single_storm,
        single_alert_storm_requests=single_traffic,
        drain=drained,
        drain_requests=drain_traffic,
        # The single-alert storm executed by 1, 2 and 3 replicas side by side (shards).
        replicas=replicas,
        baseline={
            "bare_cordon_patch": percentiles(bare),
            "bare_cordon_patch_storm_nodes_per_s": patched,
            "list_every_node_per_check": percentiles(listed),
            "nvsentinel": NVSENTINEL,
        },
        targets={
            "storm_cordon_nodes_per_s": at_least(stormed["cordon_nodes_per_s"], 50.0),
            "storm_per_node_over_bare_patch_p50": at_most(
                stormed["per_node_over_bare_patch_p50"], 1.5
            ),
            "single_alert_storm_per_node_over_bare_patch_p50": at_most(
                single_storm["per_node_over_bare_patch_p50"], 1.5
            ),
            "single_event_to_cordon_p99_ms": at_most(single["p99_ms"], 50.0),
            "server_errors_5xx": at_most(
                storm_traffic["server_errors_5xx"]
                + single_traffic["server_errors_5xx"]
                + drain_traffic["server_errors_5xx"],
                0,
            ),
            "replica_steps_started_twice": at_most(
                sum(r["steps_started_twice"] for r in replicas), 0
            ),
            "peak_requests_over_bucket": at_most(
                max(
                    storm_traffic["peak_requests_in_1s"],
                    single_traffic["peak_requests_in_1s"],
                    drain_traffic["peak_requests_in_1s"],
                )
                - (args.qps + args.burst),
                0,
            ),
        },
    )


def _stop(signum: int, _frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C: the replicas and the control plane are stopped on the way.
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--storm", type=int, default=750)
    parser.add_argument("--singles", type=int, default=50)
    parser.add_argument("--drain-nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=15)
    parser.add_argument("--qps", type=float, default=300.0, help="as clusters[*].kube_qps")
    parser.add_argument("--burst", type=int, default=300, help="as clusters[*].kube_burst")
    parser.add_argument(
        "--replicas",
        default="1,2,3",
        help="replica counts for the sharded storm on PostgreSQL ('' to leave it out)",
    )
    args = parser.parse_args()
    if args.storm + args.singles > args.nodes or args.drain_nodes > args.storm:
        parser.error("need storm + singles <= nodes and drain-nodes <= storm")
    logging.basicConfig(level=logging.ERROR)
    use_test_helpers("integration/kube", "reliability")
    import control_plane

    with tempfile.TemporaryDirectory() as tmp:
        try:
            plane = control_plane.start(Path(tmp) / "k8s", rbac=False)
        except BaseException as exc:  # pytest's skip/fail: a part is missing
            if type(exc).__name__ in ("Skipped", "Failed"):
                print(f"fleet: {exc}", file=sys.stderr)
                sys.exit(2)
            raise
        try:
            asyncio.run(bench(plane, args, Path(tmp)))
        finally:
            plane.stop()


if __name__ == "__main__":
    main()

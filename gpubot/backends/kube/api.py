"""KubernetesKubeApi: the KubeApi port on the official client, its hot requests over aiohttp."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gpubot.backends.kube import convert
from gpubot.backends.kube.connect import CONNECTIONS
from gpubot.backends.kube.dry_run import DryRunMemo
from gpubot.backends.kube.errors import eviction_error, retry_after, translate
from gpubot.backends.kube.event_queue import EventQueue
from gpubot.backends.kube.node_cache import NodeCache
from gpubot.backends.kube.pacing import TokenBucket
from gpubot.backends.kube.pod_cache import PodCache
from gpubot.backends.kube.transport import (
    AioTransport,
    ClientTransport,
    Unreachable,
    segment,
)
from gpubot.backends.kube.workloads import KubeWorkloads
from gpubot.domain.fleet.cluster import (
    CORDON_BY_ANNOTATION,
    CORDON_REASON_ANNOTATION,
    FleetView,
    NodeInfo,
    PodDisruptionBudget,
    PodEvent,
    PodInfo,
    Taint,
)
from gpubot.errors import NotFoundError, PermanentStepError, TemporaryStepError

T = TypeVar("T")
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
# Node events live in `default`, keyed by the node's name, as the kubelet writes them.
EVENT_NAMESPACE = "default"
COMPONENT = "gpubot"
# A 429 from API priority and fairness is retried this many times, after its Retry-After
# (at most MAX_RETRY_AFTER seconds each), through the token bucket.
THROTTLE_RETRIES = 3
MAX_RETRY_AFTER = 10.0


class KubernetesKubeApi:
    """One cluster through its API server.

    The requests every alert sends (node PATCH and GET, pod LIST, Event POST) go as JSON
    through `http` (transport.py: aiohttp on a loop and thread of its own, or the client's
    `call_api` where the settings need it). The rest go through the generated client, which
    blocks (urllib3), so each runs in this adapter's own thread pool: the event loop never
    waits on the network, and a drain's concurrent evictions are not capped by asyncio's
    shared default pool. `dry_run=True` sends `dryRun=All` with every
    write: the API server runs admission, RBAC and PDB checks and persists nothing.
    Every request gives up after `request_timeout` seconds (a temporary step error): a hung
    API server must not hold a step, and a pool thread, until the step's own timeout.
    Requests are paced by a token bucket (`qps`, `burst`); the fleet's GPU nodes and their
    cordons come from a watch cache (NodeCache) started on the first `gpu_fleet()`, and the
    GPU pods on each node, for plans' figures, from another (PodCache) started by `warm()`;
    so in a storm of cordons the PATCH is the one request on a step's path, and the node
    Events (EventQueue) wait for a lull in the other requests.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        dry_run: bool = False,
        workers: int = CONNECTIONS,
        request_timeout: float = 30.0,
        qps: float = 300.0,
        burst: int = 300,
        fleet_max_staleness: float = 30.0,
    ) -> None:
        self._api = api_client
        self._timeout = request_timeout
        self.pace = TokenBucket(qps=qps, burst=burst)
        self.throttled = 0  # 429s from API priority and fairness, each retried after a wait
        self._max_stale = fleet_max_staleness
        self.core = client.CoreV1Api(api_client)
        self.policy = client.PolicyV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self._dry = "All" if dry_run else None
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kube")
        # The requests every alert sends (node PATCH and GET, pod LIST, Event POST): over
        # aiohttp where the settings allow, else through the client's call_api in the pool.
        self.http: AioTransport | ClientTransport = (
            AioTransport(api_client, connections=workers, timeout=request_timeout)
            if AioTransport.serves(api_client.configuration)
            else ClientTransport(api_client, pool=self._pool, timeout=request_timeout)
        )
        # The Workloads role: its own adapter, on this one's thread pool, pacing and errors.
        self.workloads = KubeWorkloads(
            api_client, call=self._call, scale=self.scale, dry_run=dry_run
        )
        self.nodes = NodeCache(self.core, request_timeout=request_timeout)
        # The GPU pods by node, for plans' figures: started by warm() (serve), not by a
        # one-shot command, which reads the server instead.
        self.pod_cache = PodCache(self.core, request_timeout=request_timeout)
        self._dry_checks = DryRunMemo()
        self.events = EventQueue(self._create_event)

    def close(self) -> None:
        self.nodes.stop()
        self.pod_cache.stop()
        self.http.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._api.close()  # type: ignore[no-untyped-call]

    async def _call(self, fn: Callable[..., T], /, *, verb: str, resource: str, **kw: Any) -> T:
        """`fn` of the generated client, in the pool, paced."""
        loop = asyncio.get_running_loop()
        call = functools.partial(fn, _request_timeout=self._timeout, **kw)
        return await self._paced(
            lambda: loop.run_in_executor(self._pool, call), verb=verb, resource=resource
        )

    async def _request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        query: Mapping[str, str | None] | None = None,
        body: Any = None,
        content_type: str | None = None,
        event: bool = False,
    ) -> bytes:
        """One of the hot requests, through the transport, paced; the answer's body."""
        return await self._paced(
            lambda: self.http.request(
                method, path, query=query, body=body, content_type=content_type
            ),
            verb=verb,
            resource=resource,
            event=event,
        )

    async def _paced(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        verb: str,
        resource: str,
        event: bool = False,
    ) -> T:
        """`attempt` through the token bucket; a 429 is retried after its Retry-After, and
        errors come out as gpubot's kinds. Any request but an Event's (`event`) holds the
        queued Events back until the requests pause (EventQueue)."""
        if not event:
            self.events.note_other()
        try:
            for _ in range(THROTTLE_RETRIES):
                await self.pace.acquire()
                try:
                    return await attempt()
                except ApiException as exc:
                    if exc.status != 429:
                        raise
                    # The server sheds load: everyone waits its Retry-After, then goes on paced.
                    self.throttled += 1
                    self.pace.hold_off(min(retry_after(exc, 1.0), MAX_RETRY_AFTER))
            await self.pace.acquire()
            return await attempt()
        except ApiException as exc:
            raise translate(exc, verb=verb, resource=resource) from exc
        except (HTTPError, Unreachable) as exc:  # refused, reset, timed out: worth another try
            raise TemporaryStepError(
                f"cannot reach the API server ({verb} {resource}): {exc}", delay=5.0
            ) from exc

    # -- nodes ----------------------------------------------------------------------------

    async def list_nodes(self) -> list[NodeInfo]:
        nodes = await self._call(self.core.list_node, verb="list", resource="nodes")
        return [convert.node_info(n) for n in nodes.items]

    async def get_node(self, *, node: str, cached: bool = False) -> NodeInfo:
        # From the JSON: no V1Node model is built. `cached`: the watch cache's copy while its
        # watch is open (started here if it was not), else a GET.
        if cached:
            self.nodes.start()
            if (seen := self.nodes.node(node)) is not None:
                return seen
        return convert.node_info_json(await self._read_node_json(node))

    async def warm(self, *, timeout_s: float) -> bool:
        """Start the node and GPU pod watch caches and wait (in threads) for their first
        LISTs, side by side; False when either is not there within `timeout_s` (until it is,
        reads go to the server)."""
        self.nodes.start()
        self.pod_cache.start()
        synced = await asyncio.gather(
            asyncio.to_thread(self.nodes.wait_synced, timeout_s),
            asyncio.to_thread(self.pod_cache.wait_synced, timeout_s),
        )
        return all(synced)

    async def gpu_fleet(self) -> FleetView:
        """From the watch cache; a LIST instead while it has not synced yet, or when its
        watch has been down for more than `fleet_max_staleness` seconds."""
        self.nodes.start()
        view = self.nodes.view()
        now = datetime.now(UTC)
        if view is not None and (
            view.live or (now - view.as_of).total_seconds() <= self._max_stale
        ):
            return view
        nodes = [n for n in await self.list_nodes() if n.is_gpu_node]
        return FleetView(
            gpu_nodes=frozenset(n.name for n in nodes),
            cordoned=frozenset(n.name for n in nodes if n.unschedulable),
            as_of=now,
            released=view.released if view is not None else 0,
        )

    async def node_internal_ips(self) -> dict[str, str]:
        nodes = await self._call(self.core.list_node, verb="list", resource="nodes")
        found: dict[str, str] = {}
        for n in nodes.items:
            addresses = (n.status.addresses if n.status else None) or []
            ip = next((a.address for a in addresses if a.type == "InternalIP"), None)
            name = n.metadata.name if n.metadata else None
            if name and ip:
                found[name] = ip
        return found

    async def pod_ips_by_node(self, *, namespace: str, selector: str) -> dict[str, str]:
        pods = await self._call(
            self.core.list_namespaced_pod,
            verb="list",
            resource=f"pods in {namespace}",
            namespace=namespace,
            label_selector=selector,
            field_selector="status.phase=Running",
        )
        found: dict[str, str] = {}
        for pod in pods.items:
            node = pod.spec.node_name if pod.spec else None
            ip = pod.status.pod_ip if pod.status else None
            if node and ip and not (pod.metadata and pod.metadata.deletion_timestamp):
                found[node] = ip
        return found

    async def _patch_node(
        self, node: str, body: dict[str, Any], content_type: str, *, dry_run: bool = False
    ) -> None:
        await self._request(  # the patched Node is not read back
            "PATCH",
            f"/api/v1/nodes/{_name(node)}",
            verb="patch",
            resource=f"nodes/{node}",
            query={"dryRun": "All" if dry_run else self._dry},
            body=body,
            content_type=content_type,
        )

    async def set_unschedulable(
        self,
        *,
        node: str,
        value: bool,
        actor: str,
        reason: str,
        dry_run: bool = False,
        expect_version: str = "",
    ) -> None:
        # One patch for the flag and the annotations, so nobody sees one without the other;
        # null deletes an annotation in a strategic merge patch.
        annotations = (
            {CORDON_BY_ANNOTATION: actor, CORDON_REASON_ANNOTATION: reason}
            if value
            else {CORDON_BY_ANNOTATION: None, CORDON_REASON_ANNOTATION: None}
        )
        if dry_run and self._dry_checks.passed(value):
            return
        meta: dict[str, Any] = {"annotations": annotations}
        if expect_version:
            meta["resourceVersion"] = expect_version  # a precondition: 409 if the node moved
        body = {"spec": {"unschedulable": value}, "metadata": meta}
        await self._patch_node(node, body, STRATEGIC, dry_run=dry_run)
        if dry_run:
            self._dry_checks.note(value)

    async def set_taint(
        self, *, node: str, taint: Taint, present: bool, dry_run: bool = False
    ) -> None:
        # The node's taints as the API server stores them, not through the client's models:
        # a model round trip renames timeAdded to time_added, which the server then drops,
        # and timeAdded is what a NoExecute taint's tolerationSeconds count from.
        current = await self._read_node_json(node)
        spec = current.get("spec") or {}
        taints = [
            t
            for t in (spec.get("taints") or [])
            if (t.get("key"), t.get("effect")) != (taint.key, taint.effect)
        ]
        if present:
            taints.append(convert.taint_json(taint))
        # spec.taints is an atomic list: send all of it, guarded by the version we read, so
        # a taint someone added meanwhile is not lost (409 → the executor retries).
        body = {
            "metadata": {"resourceVersion": (current.get("metadata") or {}).get("resourceVersion")},
            "spec": {"taints": taints},
        }
        await self._patch_node(node, body, MERGE, dry_run=dry_run)

    async def _read_node_json(self, node: str) -> dict[str, Any]:
        """The Node as the API server sent it (camelCase JSON): what get_node reads, and
        what a write that must give back fields exactly as they were starts from."""
        raw = await self._request(
            "GET", f"/api/v1/nodes/{_name(node)}", verb="get", resource=f"nodes/{node}"
        )
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise TemporaryStepError(f"the API server answered nodes/{node} with no object")
        return data

    async def set_node_metadata(
        self,
        *,
        node: str,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        meta: dict[str, Any] = {}
        if labels:
            meta["labels"] = dict(labels)
        if annotations:
            meta["annotations"] = dict(annotations)
        if meta:
            await self._patch_node(node, {"metadata": meta}, STRATEGIC)

    async def post_node_event(
        self,
        *,
        node: str,
        reason: str,
        message: str,
        event_type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        # The Event as JSON, not as client models: the client would walk the models again
        # to serialise them, on every cordon.
        body = {
            "metadata": {"generateName": f"{node}.", "namespace": EVENT_NAMESPACE},
            "involvedObject": {"kind": "Node", "name": node, "uid": node},
            "reason": reason,
            "message": message[:1024],
            "type": event_type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": COMPONENT,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.events.put(body, what=f"{reason} on {node}")

    async def _create_event(self, body: dict[str, Any]) -> None:
        await self._request(  # nothing is read from the reply
            "POST",
            f"/api/v1/namespaces/{EVENT_NAMESPACE}/events",
            verb="create",
            resource="events",
            query={"dryRun": self._dry},
            body=body,
            event=True,
        )

    async def flush_events(self, *, timeout_s: float) -> int:
        return await self.events.flush(timeout_s=timeout_s)

    # -- pods -----------------------------------------------------------------------------

    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None, cached: bool = False
    ) -> list[PodInfo]:
        # From the JSON: no V1Pod model is built for any pod listed. resourceVersion "0": any
        # version the API server's watch cache holds, served from its index by node, no read
        # of etcd.
        query = {
            "fieldSelector": f"spec.nodeName={node}" if node else None,
            "resourceVersion": "0" if cached else None,
        }
        raw = await self._request(
            "GET",
            f"/api/v1/namespaces/{_name(namespace)}/pods" if namespace else "/api/v1/pods",
            verb="list",
            resource=f"pods in {namespace}" if namespace else "pods",
            query=query,
        )
        listed = json.loads(raw)
        items = listed.get("items") if isinstance(listed, dict) else None
        return [convert.pod_info_json(p) for p in items or []]

    async def gpu_pods(self, *, node: str) -> list[PodInfo]:
        kept = self.pod_cache.gpu_pods(node)
        if kept is not None:
            return kept
        return [p for p in await self.list_pods(node=node, cached=True) if p.gpu_request > 0]

    async def get_pod(self, *, namespace: str, name: str) -> PodInfo:
        pod = await self._call(
            self.core.read_namespaced_pod,
            verb="get",
            resource=f"pods {namespace}/{name}",
            name=name,
            namespace=namespace,
        )
        return convert.pod_info(pod)

    async def pod_logs(
        self,
        *,
        namespace: str,
        name: str,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int = 100,
    ) -> str:
        text = await self._call(
            self.core.read_namespaced_pod_log,
            verb="get",
            resource=f"pods/log {namespace}/{name}",
            name=name,
            namespace=namespace,
            container=container,
            previous=previous,
            tail_lines=tail_lines,
        )
        return str(text or "")

    async def pod_events(self, *, namespace: str, name: str) -> list[PodEvent]:
        events = await self._call(
            self.core.list_namespaced_event,
            verb="list",
            resource=f"events in {namespace}",
            namespace=namespace,
            field_selector=f"involvedObject.kind=Pod,involvedObject.name={name}",
        )
        return [convert.pod_event(e) for e in events.items]

    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """policy/v1 Eviction: 201 evicted, 404 already gone (success), 429 a PDB says no."""
        body = client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=name, namespace=namespace),
            delete_options=client.V1DeleteOptions(
                grace_period_seconds=grace_seconds, dry_run=[self._dry] if self._dry else None
            ),
        )
        loop = asyncio.get_running_loop()
        call = functools.partial(
            self.core.create_namespaced_pod_eviction,
            name=name,
            namespace=namespace,
            body=body,
            dry_run=self._dry,
        )
        try:
            await self.pace.acquire()
            await loop.run_in_executor(self._pool, call)
        except ApiException as exc:
            if exc.status == 404:
                return  # gone already: what an eviction wants
            raise eviction_error(exc, namespace=namespace, name=name) from exc
        except HTTPError as exc:
            raise TemporaryStepError(f"cannot reach the API server: {exc}", delay=5.0) from exc

    async def delete_pod(self, *, namespace: str, name: str, grace_seconds: int | None) -> None:
        """Delete without PDB checks: only where a runbook says so explicitly."""
        try:
            await self._call(
                self.core.delete_namespaced_pod,
                verb="delete",
                resource=f"pods {namespace}/{name}",
                name=name,
                namespace=namespace,
                grace_period_seconds=grace_seconds,
                dry_run=self._dry,
            )
        except NotFoundError:
            return

    async def list_pdbs(self, *, namespace: str | None = None) -> list[PodDisruptionBudget]:
        if namespace:
            pdbs = await self._call(
                self.policy.list_namespaced_pod_disruption_budget,
                verb="list",
                resource=f"poddisruptionbudgets in {namespace}",
                namespace=namespace,
            )
        else:
            pdbs = await self._call(
                self.policy.list_pod_disruption_budget_for_all_namespaces,
                verb="list",
                resource="poddisruptionbudgets",
            )
        return [convert.pdb_info(b) for b in pdbs.items]

    async def scale(
        self,
        *,
        namespace: str,
        kind: Literal["Deployment", "StatefulSet"],
        name: str,
        replicas: int,
        dry_run: bool = False,
    ) -> int:
        """Set replicas through the /scale subresource; returns the previous count."""
        read, patch, resource = (
            (
                self.apps.read_namespaced_deployment_scale,
                self.apps.patch_namespaced_deployment_scale,
                "deployments/scale",
            )
            if kind == "Deployment"
            else (
                self.apps.read_namespaced_stateful_set_scale,
                self.apps.patch_namespaced_stateful_set_scale,
                "statefulsets/scale",
            )
        )
        what = f"{resource} {namespace}/{name}"
        before = await self._call(read, verb="get", resource=what, name=name, namespace=namespace)
        await self._call(
            patch,
            verb="patch",
            resource=what,
            name=name,
            namespace=namespace,
            body={"spec": {"replicas": replicas}},
            dry_run="All" if dry_run else self._dry,
            _content_type=MERGE,
        )
        return int((before.spec.replicas if before.spec else None) or 0)


def _name(name: str) -> str:
    """An object's name as one path segment; a name that cannot be one is a step that cannot
    succeed (the generated client would have sent it as it was)."""
    try:
        return segment(name)
    except ValueError as exc:
        raise PermanentStepError(str(exc)) from exc

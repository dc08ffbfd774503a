"""A hand-written stand-in Kubernetes API server on loopback, for what the real one cannot do here.

The Kubernetes tests run against a real kube-apiserver with etcd and the disruption controller
(control_plane.py). This stand-in is kept ONLY for what that server cannot produce here:
injected failures (500s and other status codes on demand), timeouts and slow responses, and
pod logs (no kubelet answers them). Some reliability tests and benchmarks drive it too.

It speaks the REST paths the official client uses: nodes (get/list/patch with strategic-merge
and merge patches), pods (list with field and label selectors, get, delete, /log),
pods/eviction with PodDisruptionBudget semantics (201 / 429), PDBs, Leases with
resourceVersion conflicts (409), Events, Deployments, StatefulSets and ReplicaSets (get, merge
patch) with /scale, 404 Status bodies, and injectable failures and latency. State is plain
JSON dicts, as etcd would hold them; tests change it through the helpers under one lock.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import uvicorn
from kubernetes import client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

Obj = dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code: int, reason: str, message: str, **details: Any) -> JSONResponse:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "details": details,
        "code": code,
    }
    return JSONResponse(body, status_code=code)


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 merge; a strategic merge patch of the fields used here reads the same
    (Node taints have no merge key, so the API server replaces that list whole too)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def _path(obj: Obj, dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def field_match(obj: Obj, selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        key, op, value = re.fullmatch(r"([^!=]+)(!=|==|=)(.*)", term).groups()  # type: ignore[union-attr]
        if (_path(obj, key) == value) != (op != "!="):
            return False
    return True


def label_match(labels: dict[str, str], selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        if m := re.fullmatch(r"([^!=]+)(!=|==|=)(.*)", term):
            key, op, value = m.groups()
            if (labels.get(key) == value) != (op != "!="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    times: int
    code: int = 500


@dataclass
class KubeStandin:
    """The cluster's objects plus the knobs tests turn."""

    nodes: dict[str, Obj] = field(default_factory=dict)
    pods: dict[tuple[str, str], Obj] = field(default_factory=dict)
    pdbs: dict[tuple[str, str], Obj] = field(default_factory=dict)
    leases: dict[tuple[str, str], Obj] = field(default_factory=dict)
    events: list[Obj] = field(default_factory=list)
    scales: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # apps/v1 objects by (namespace, plural, name): deployments, statefulsets, replicasets.
    workloads: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    latency: dict[str, float] = field(default_factory=dict)  # "eviction", "patch", ... → s
    faults: list[Fault] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (method, path?query)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    _rv: Iterator[int] = field(default_factory=lambda: itertools.count(100))

    # -- helpers tests use ------------------------------------------------------------------

    def version(self) -> str:
        return str(next(self._rv))

    def add_node(
        self, name: str, *, gpus: int = 8, product: str = "NVIDIA-H100-80GB-HBM3", **extra: Any
    ) -> Obj:
        node: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid4()),
                "resourceVersion": self.version(),
                "creationTimestamp": _now(),
                "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": product},
                "annotations": {},
            },
            "spec": {},
            "status": {
                "capacity": {"cpu": "96", "memory": "2Ti", "nvidia.com/gpu": str(gpus)},
                "allocatable": {"cpu": "95", "memory": "2000Gi", "nvidia.com/gpu": str(gpus)},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        node = merge(node, extra)
        with self.lock:
            self.nodes[name] = node
        return node

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        node: str,
        gpus: int = 0,
        owner: tuple[str, str] | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        phase: str = "Running",
        **extra: Any,
    ) -> Obj:
        resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
        meta: Obj = {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "resourceVersion": self.version(),
            "creationTimestamp": _now(),
            "labels": labels or {},
            "annotations": annotations or {},
        }
        if owner:
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner[0],
                    "name": owner[1],
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                }
            ]
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "nodeName": node,
                "containers": [{"name": "main", "image": "nvcr.io/x:1", "resources": resources}],
            },
            "status": {
                "phase": phase,
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": "nvcr.io/x:1",
                        "imageID": "sha256:1",
                        "ready": phase == "Running",
                        "restartCount": 0,
                        "state": {"running": {"startedAt": _now()}},
                    }
                ],
            },
        }
        pod = merge(pod, extra)
        with self.lock:
            self.pods[(namespace, name)] = pod
        return pod

    def add_pdb(
        self, namespace: str, name: str, *, selector: dict[str, str], min_available: int
    ) -> None:
        with self.lock:
            self.pdbs[(namespace, name)] = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
                "spec": {"selector": {"matchLabels": selector}, "minAvailable": min_available},
            }

    def add_workload(
        self,
        namespace: str,
        kind: str,
        name: str,
        *,
        replicas: int = 1,
        selector: dict[str, str] | None = None,
        owner: tuple[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> Obj:
        """A Deployment, StatefulSet or ReplicaSet (apps/v1), with the fields the client needs."""
        selector = selector or {"app": name}
        meta: Obj = {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "resourceVersion": self.version(),
            "creationTimestamp": _now(),
            "labels": dict(selector),
            "annotations": annotations or {},
        }
        if owner:
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner[0],
                    "name": owner[1],
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                }
            ]
        template = {
            "metadata": {"labels": dict(selector)},
            "spec": {"containers": [{"name": "main"}]},
        }
        obj: Obj = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": meta,
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": dict(selector)},
                "template": template,
                **({"serviceName": name} if kind == "StatefulSet" else {}),
            },
            "status": {"replicas": replicas},
        }
        with self.lock:
            self.workloads[(namespace, f"{kind.lower()}s", name)] = obj
        return obj

    def fail(self, method: str, path: str, *, times: int = 1, code: int = 500) -> None:
        """The next `times` requests matching method and path regex get `code`."""
        with self.lock:
            self.faults.append(Fault(method, re.compile(path), times, code))

    def pods_on(self, node: str) -> list[str]:
        with self.lock:
            return sorted(
                f"{ns}/{n}" for (ns, n), p in self.pods.items() if p["spec"].get("nodeName") == node
            )

    def calls_of(self, method: str, fragment: str) -> list[str]:
        return [p for m, p in self.calls if m == method and fragment in p]

    # -- semantics -------------------------------------------------------------------------

    def pdb_status(self, pdb: Obj) -> Obj:
        """As the disruption controller computes it: healthy matching pods above the floor."""
        ns = pdb["metadata"]["namespace"]
        selector = pdb["spec"]["selector"]["matchLabels"]
        healthy = sum(
            1
            for (pns, _), p in self.pods.items()
            if pns == ns
            and p["status"].get("phase") == "Running"
            and p["spec"].get("nodeName")
            and all(p["metadata"].get("labels", {}).get(k) == v for k, v in selector.items())
        )
        floor = int(pdb["spec"].get("minAvailable", 0))
        return {
            "currentHealthy": healthy,
            "desiredHealthy": floor,
            "disruptionsAllowed": max(0, healthy - floor),
            "expectedPods": healthy,
        }

    def pdb_view(self, pdb: Obj) -> Obj:
        return {**pdb, "status": self.pdb_status(pdb)}


def _list(kind: str, items: list[Obj], api_version: str = "v1") -> JSONResponse:
    return JSONResponse(
        {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }
    )


def build_app(s: KubeStandin) -> Starlette:
    async def gate(request: Request, kind: str) -> Response | None:
        # Read the body now, outside s.lock: Starlette caches it, so the handlers' later
        # `await request.body()` under the (threading) lock returns without yielding. Awaiting
        # a body still in flight while holding the lock would let another request on this
        # event loop block the loop on the lock: a deadlock.
        await request.body()
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        with s.lock:
            s.calls.append((request.method, path))
            fault = next(
                (f for f in s.faults if f.method == request.method and f.path.search(path)), None
            )
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    s.faults.remove(fault)
        if delay := s.latency.get(kind):
            await asyncio.sleep(delay)
        if fault is not None:
            return status(fault.code, "InternalError", f"injected failure {fault.code}")
        return None

    async def nodes(request: Request) -> Response:
        if r := await gate(request, "list"):
            return r
        with s.lock:
            items = [copy.deepcopy(n) for n in s.nodes.values()]
        return _list("NodeList", items)

    async def node(request: Request) -> Response:
        name = request.path_params["name"]
        if r := await gate(request, request.method.lower()):
            return r
        with s.lock:
            current = s.nodes.get(name)
            if current is None:
                return status(404, "NotFound", f'nodes "{name}" not found', name=name, kind="nodes")
            if request.method == "GET":
                return JSONResponse(copy.deepcopy(current))
            ctype = request.headers.get("content-type", "")
            if ctype not in (
                "application/strategic-merge-patch+json",
                "application/merge-patch+json",
            ):
                return status(
                    415, "UnsupportedMediaType", f"the body of type {ctype} is unsupported"
                )
            patch = json.loads(await request.body())
            want = (patch.get("metadata") or {}).get("resourceVersion")
            if want and want != current["metadata"]["resourceVersion"]:
                return status(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on nodes "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                )
            updated = merge(current, patch)
            if request.query_params.get("dryRun") != "All":
                updated["metadata"]["resourceVersion"] = s.version()
                s.nodes[name] = updated
            return JSONResponse(copy.deepcopy(updated))

    def _pods(request: Request, namespace: str | None) -> list[Obj]:
        fsel = request.query_params.get("fieldSelector")
        lsel = request.query_params.get("labelSelector")
        with s.lock:
            return [
                copy.deepcopy(p)
                for (ns, _), p in s.pods.items()
                if (namespace is None or ns == namespace)
                and field_match(p, fsel)
                and label_match(p["metadata"].get("labels", {}), lsel)
            ]

    async def all_pods(request: Request) -> Response:
        if r := await gate(request, "list"):
            return r
        return _list("PodList", _pods(request, None))

    async def ns_pods(request: Request) -> Response:
        if r := await gate(request, "list"):
            return r
        return _list("PodList", _pods(request, request.path_params["ns"]))

    def _missing_pod(ns: str, name: str) -> JSONResponse:
        return status(404, "NotFound", f'pods "{name}" not found', name=name, kind="pods")

    async def pod(request: Request) -> Response:
        ns, name = request.path_params["ns"], request.path_params["name"]
        if r := await gate(request, request.method.lower()):
            return r
        with s.lock:
            current = s.pods.get((ns, name))
            if current is None:
                return _missing_pod(ns, name)
            if request.method == "DELETE" and request.query_params.get("dryRun") != "All":
                del s.pods[(ns, name)]
            return JSONResponse(copy.deepcopy(current))

    async def pod_log(request: Request) -> Response:
        ns, name = request.path_params["ns"], request.path_params["name"]
        if r := await gate(request, "log"):
            return r
        with s.lock:
            current = s.pods.get((ns, name))
            if current is None:
                return _missing_pod(ns, name)
            logs = current.get("_logs", {})
        previous = request.query_params.get("previous") == "true"
        lines = list(logs.get("previous" if previous else "current", []))
        if previous and not lines:
            return status(
                400, "BadRequest", f'previous terminated container "main" in pod "{name}" not found'
            )
        tail = request.query_params.get("tailLines")
        if tail is not None:
            lines = lines[-int(tail) :] if int(tail) else []
        return PlainTextResponse("".join(f"{line}\n" for line in lines))

    async def eviction(request: Request) -> Response:
        ns, name = request.path_params["ns"], request.path_params["name"]
        if r := await gate(request, "eviction"):
            return r
        body = json.loads(await request.body())
        if (
            body.get("kind", "Eviction") != "Eviction"
            or body.get("metadata", {}).get("name") != name
        ):
            return status(400, "BadRequest", "name in URL does not match name in Eviction object")
        with s.lock:
            pod = s.pods.get((ns, name))
            if pod is None:
                return _missing_pod(ns, name)
            labels = pod["metadata"].get("labels", {})
            for (pns, pname), pdb in s.pdbs.items():
                selector = pdb["spec"]["selector"]["matchLabels"]
                if pns != ns or not all(labels.get(k) == v for k, v in selector.items()):
                    continue
                st = s.pdb_status(pdb)
                if st["disruptionsAllowed"] < 1:
                    return status(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        causes=[
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {pname} needs "
                                f"{st['desiredHealthy']} healthy pods and has "
                                f"{st['currentHealthy']} currently",
                            }
                        ],
                    )
            if request.query_params.get("dryRun") != "All":
                del s.pods[(ns, name)]
        return status(201, "", "")

    async def pdbs_all(request: Request) -> Response:
        if r := await gate(request, "list"):
            return r
        with s.lock:
            items = [s.pdb_view(p) for p in s.pdbs.values()]
        return _list("PodDisruptionBudgetList", items, "policy/v1")

    async def pdbs_ns(request: Request) -> Response:
        if r := await gate(request, "list"):
            return r
        ns = request.path_params["ns"]
        with s.lock:
            items = [s.pdb_view(p) for (pns, _), p in s.pdbs.items() if pns == ns]
        return _list("PodDisruptionBudgetList", items, "policy/v1")

    async def events(request: Request) -> Response:
        ns = request.path_params["ns"]
        if r := await gate(request, "event"):
            return r
        if request.method == "POST":
            event = json.loads(await request.body())
            meta = event.setdefault("metadata", {})
            meta.setdefault("name", meta.pop("generateName", "event.") + uuid.uuid4().hex[:10])
            meta.update(namespace=ns, uid=str(uuid.uuid4()), resourceVersion=s.version())
            with s.lock:
                s.events.append(event)
            return JSONResponse(event, status_code=201)
        fsel = request.query_params.get("fieldSelector")
        with s.lock:
            items = [
                copy.deepcopy(e)
                for e in s.events
                if e["metadata"]["namespace"] == ns and field_match(e, fsel)
            ]
        return _list("EventList", items)

    async def leases(request: Request) -> Response:
        ns = request.path_params["ns"]
        name = request.path_params.get("name")
        if r := await gate(request, "lease"):
            return r
        with s.lock:
            current = s.leases.get((ns, name)) if name else None
            if request.method == "POST":
                body = json.loads(await request.body())
                key = (ns, body["metadata"]["name"])
                if key in s.leases:
                    return status(409, "AlreadyExists", f'leases "{key[1]}" already exists')
                body["metadata"].update(namespace=ns, resourceVersion=s.version())
                s.leases[key] = body
                return JSONResponse(copy.deepcopy(body), status_code=201)
            if current is None:
                return status(404, "NotFound", f'leases "{name}" not found', kind="leases")
            if request.method == "GET":
                return JSONResponse(copy.deepcopy(current))
            body = json.loads(await request.body())  # PUT
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return status(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": '
                    "the object has been modified",
                )
            body["metadata"]["resourceVersion"] = s.version()
            s.leases[(ns, name)] = body
            return JSONResponse(copy.deepcopy(body))

    async def workload(request: Request) -> Response:
        ns, kind, name = (request.path_params[k] for k in ("ns", "kind", "name"))
        if r := await gate(request, request.method.lower()):
            return r
        with s.lock:
            current = s.workloads.get((ns, kind, name))
            if current is None:
                return status(404, "NotFound", f'{kind}.apps "{name}" not found', kind=kind)
            if request.method == "PATCH":
                updated = merge(current, json.loads(await request.body()))
                if request.query_params.get("dryRun") != "All":
                    updated["metadata"]["resourceVersion"] = s.version()
                    s.workloads[(ns, kind, name)] = updated
                return JSONResponse(copy.deepcopy(updated))
            return JSONResponse(copy.deepcopy(current))

    def _controller_scaled(ns: str, obj: Obj, replicas: int) -> None:
        """What the Deployment/StatefulSet controller does at 0 replicas: its pods go."""
        if replicas:
            return
        selector = obj["spec"]["selector"]["matchLabels"]
        for key, pod in list(s.pods.items()):
            labels = pod["metadata"].get("labels", {})
            if key[0] == ns and all(labels.get(k) == v for k, v in selector.items()):
                del s.pods[key]

    async def scale(request: Request) -> Response:
        ns, kind, name = (request.path_params[k] for k in ("ns", "kind", "name"))
        if r := await gate(request, "scale"):
            return r
        with s.lock:
            obj = s.workloads.get((ns, kind, name))
            if obj is not None:
                s.scales[(ns, kind, name)] = int(obj["spec"]["replicas"])
            if (ns, kind, name) not in s.scales:
                return status(404, "NotFound", f'{kind}.apps "{name}" not found', kind=kind)
            if request.method == "PATCH":
                patch = json.loads(await request.body())
                if request.query_params.get("dryRun") != "All":
                    s.scales[(ns, kind, name)] = int(patch["spec"]["replicas"])
                    if obj is not None:
                        obj["spec"]["replicas"] = s.scales[(ns, kind, name)]
                        _controller_scaled(ns, obj, s.scales[(ns, kind, name)])
            replicas = s.scales[(ns, kind, name)]
        return JSONResponse(
            {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": replicas},
                "status": {"replicas": replicas},
            }
        )

    routes = [
        Route("/api/v1/nodes", nodes),
        Route("/api/v1/nodes/{name}", node, methods=["GET", "PATCH"]),
        Route("/api/v1/pods", all_pods),
        Route("/api/v1/namespaces/{ns}/pods", ns_pods),
        Route("/api/v1/namespaces/{ns}/pods/{name}", pod, methods=["GET", "DELETE"]),
        Route("/api/v1/namespaces/{ns}/pods/{name}/log", pod_log),
        Route("/api/v1/namespaces/{ns}/pods/{name}/eviction", eviction, methods=["POST"]),
        Route("/api/v1/namespaces/{ns}/events", events, methods=["GET", "POST"]),
        Route("/apis/policy/v1/poddisruptionbudgets", pdbs_all),
        Route("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", pdbs_ns),
        Route("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", leases, methods=["POST"]),
        Route(
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}",
            leases,
            methods=["GET", "PUT"],
        ),
        Route("/apis/apps/v1/namespaces/{ns}/{kind}/{name}/scale", scale, methods=["GET", "PATCH"]),
        Route("/apis/apps/v1/namespaces/{ns}/{kind}/{name}", workload, methods=["GET", "PATCH"]),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return status(404, "NotFound", "the server could not find the requested resource")

    return Starlette(routes=routes, exception_handlers={404: not_found})


def client_for(standin: KubeStandin) -> client.ApiClient:
    """The official client, configured in code (no kubeconfig) for the stand-in's URL."""
    configuration = client.Configuration(host=standin.url)
    configuration.retries = 0  # a fault must reach the adapter, not be retried by urllib3
    return client.ApiClient(configuration)


@contextmanager
def serve(standin: KubeStandin) -> Iterator[KubeStandin]:
    """Run the stand-in on a free 127.0.0.1 port in a thread for the duration of the block.

    The socket is made with IPPROTO_TCP: asyncio sets TCP_NODELAY only on such sockets, and
    without it each answer waits out a 40 ms delayed ACK, which a real API server never does.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        build_app(standin), log_level="warning", lifespan="off", ws="none", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        threading.Event().wait(0.01)
    standin.url = f"http://127.0.0.1:{port}"
    try:
        yield standin
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()

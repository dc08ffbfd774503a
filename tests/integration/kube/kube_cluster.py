"""One test's corner of the shared real API server: its namespaces, GPU nodes, Running pods,
PDBs and workloads (removed after the test), a client that records what it sent, and a
stand-in kubelet that finishes pod deletions.

The API server has no kubelet, scheduler or workload controllers here, so the helpers do their
part: pods are created bound to a node and their status set to Running and Ready, each
namespace gets its `default` ServiceAccount, new nodes lose the `node.kubernetes.io/not-ready`
taint and report Ready, and `Kubelet` deletes (grace 0) the pods that were asked to terminate.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import urlsplit

import yaml
from control_plane import REPO, ControlPlane
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError
from waiting import LIMIT_S

Obj = dict[str, Any]
GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
SHIPPED_RBAC = REPO / "deploy" / "rbac" / "clusterrole.yaml"
_serial = itertools.count(1)


@dataclass(frozen=True)
class Call:
    """One request as the client sent it (path with its query) and the status it got."""

    method: str
    path: str
    status: int


class RecordingApiClient(client.ApiClient):
    """The official client, recording every request and its status in `calls`."""

    def __init__(self, configuration: client.Configuration, calls: list[Call]) -> None:
        super().__init__(configuration)
        self.calls = calls

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            response = super().call_api(method, url, *args, **kwargs)
        except ApiException as exc:
            self.calls.append(Call(method, path, int(exc.status or 0)))
            raise
        self.calls.append(Call(method, path, int(response.status)))
        return response

    def observe(self, method: str, url: str, status: int) -> None:
        """A request the adapter sent without call_api (its aiohttp transport)."""
        parts = urlsplit(url)
        self.calls.append(
            Call(method, parts.path + (f"?{parts.query}" if parts.query else ""), status)
        )


def configuration(plane: ControlPlane, token: str) -> client.Configuration:
    """What `load_kube_config` makes of a kubeconfig for this server and token."""
    configuration = client.Configuration()
    config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "lab",
            "clusters": [
                {
                    "name": "lab",
                    "cluster": {"server": plane.url, "certificate-authority": str(plane.ca)},
                }
            ],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "user"}}],
        },
        client_configuration=configuration,
        persist_config=False,
    )
    configuration.retries = 0  # an error must reach the adapter, not be retried by urllib3
    return configuration


def ready_pod_status(phase: str = "Running", **extra: Any) -> Obj:
    ready = "True" if phase == "Running" else "False"
    return {
        "phase": phase,
        "conditions": [
            {"type": "Ready", "status": ready},
            {"type": "ContainersReady", "status": ready},
        ],
        **extra,
    }


@dataclass
class Cluster:
    """A test's objects, named with a prefix unique in the session: nodes are cluster-scoped
    and the server is shared, so every name a test uses goes through `name()`."""

    plane: ControlPlane
    prefix: str = field(default_factory=lambda: f"t{os.getpid() % 1000}x{next(_serial)}")
    calls: list[Call] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    clients: list[client.ApiClient] = field(default_factory=list)
    finalizers: list[Callable[[], object]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.admin = client.ApiClient(configuration(self.plane, self.plane.token))
        self.core = client.CoreV1Api(self.admin)
        self.policy = client.PolicyV1Api(self.admin)
        self.apps = client.AppsV1Api(self.admin)
        self.rbac = client.RbacAuthorizationV1Api(self.admin)
        self.coordination = client.CoordinationV1Api(self.admin)

    def name(self, short: str) -> str:
        return f"{self.prefix}-{short}"

    def client(self, token: str | None = None, *, record: bool = True) -> client.ApiClient:
        """A new client (admin unless a token is given) that records into `calls` (the bot's
        requests), or not (the helpers' own, such as the stand-in kubelet's)."""
        made = configuration(self.plane, token or self.plane.token)
        api = RecordingApiClient(made, self.calls) if record else client.ApiClient(made)
        self.clients.append(api)
        return api

    def calls_of(self, method: str, fragment: str) -> list[str]:
        return [c.path for c in self.calls if c.method == method and fragment in c.path]

    # -- objects --------------------------------------------------------------------------

    def namespace(self, short: str) -> str:
        """A namespace with its `default` ServiceAccount (no controller creates it here)."""
        ns = self.name(short)
        if ns not in self.namespaces:
            self.core.create_namespace({"metadata": {"name": ns}})
            self.namespaces.append(ns)
            self.core.create_namespaced_service_account(ns, {"metadata": {"name": "default"}})
        return ns

    def add_node(
        self,
        short: str,
        *,
        gpus: int = 8,
        product: str = GPU_PRODUCT,
        capacity: dict[str, str] | None = None,
        allocatable: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        taints: list[Obj] | None = None,
        unschedulable: bool = False,
        ready: bool = True,
        addresses: list[Obj] | None = None,
    ) -> str:
        """A Node as the NVIDIA device plugin and GPU feature discovery leave it: nvidia.com/gpu
        capacity and allocatable, the product label, Ready, and only the taints given."""
        name = self.name(short)
        gpu = {"nvidia.com/gpu": str(gpus)} if gpus else {}
        status = {
            "capacity": {"cpu": "96", "memory": "2Ti", "pods": "110", **gpu, **(capacity or {})},
            "allocatable": {
                "cpu": "95",
                "memory": "2000Gi",
                "pods": "110",
                **gpu,
                **(allocatable or {}),
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": addresses or [],
        }
        meta_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        if gpus or capacity:
            meta_labels["nvidia.com/gpu.product"] = product
        self.core.create_node(
            {
                "metadata": {"name": name, "labels": {**meta_labels, **(labels or {})}},
                "status": status,
            }
        )
        self.nodes.append(name)
        # Admission adds node.kubernetes.io/not-ready to a new Node; a kubelet reporting Ready
        # would see it removed by the node lifecycle controller, which does not run here.
        self.core.patch_node(
            name,
            {"spec": {"taints": taints or [], "unschedulable": unschedulable or None}},
            _content_type="application/merge-patch+json",
        )
        return name

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        node: str,
        gpus: int = 0,
        owner: tuple[str, str] | tuple[str, str, str] | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        phase: str = "Running",
        spec: Obj | None = None,
        status: Obj | None = None,
    ) -> str:
        """A pod bound to `node` (as the scheduler would), then Running and Ready (as its kubelet
        would report); `owner` is (kind, name[, uid]) of its controller."""
        resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
        meta: Obj = {
            "name": name,
            "labels": labels or {},
            "annotations": annotations or {},
        }
        if owner:
            kind, owner_name, *uid = owner
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1" if kind != "Job" else "batch/v1",
                    "kind": kind,
                    "name": owner_name,
                    "uid": uid[0] if uid else f"00000000-0000-4000-8000-{next(_serial):012d}",
                    "controller": True,
                }
            ]
        body: Obj = {
            "metadata": meta,
            "spec": {
                "nodeName": node,
                "containers": [{"name": "main", "image": "nvcr.io/x:1", "resources": resources}],
                "terminationGracePeriodSeconds": 30,
                **(spec or {}),
            },
        }
        self.core.create_namespaced_pod(namespace, body)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        main_status = {
            "name": "main",
            "image": "nvcr.io/x:1",
            "imageID": "sha256:1",
            "ready": phase == "Running",
            "restartCount": 0,
            "state": {"running": {"startedAt": now}},
        }
        new_status = ready_pod_status(phase, containerStatuses=[main_status], startTime=now)
        new_status.update(status or {})
        self.core.patch_namespaced_pod_status(name, namespace, {"status": new_status})
        return name

    def add_pdb(
        self, namespace: str, name: str, *, selector: dict[str, str], min_available: int
    ) -> None:
        self.policy.create_namespaced_pod_disruption_budget(
            namespace,
            {
                "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": selector}, "minAvailable": min_available},
            },
        )

    def wait_pdb(self, namespace: str, name: str, *, healthy: int, limit: float = LIMIT_S) -> Obj:
        """Until the disruption controller has counted `healthy` pods for the budget."""
        deadline = time.monotonic() + limit
        while True:
            pdb = self.policy.read_namespaced_pod_disruption_budget(name, namespace)
            st = pdb.status
            if (
                st is not None
                and st.observed_generation == pdb.metadata.generation
                and st.current_healthy == healthy
            ):
                return {"allowed": st.disruptions_allowed, "healthy": st.current_healthy}
            if time.monotonic() > deadline:
                raise AssertionError(f"PDB {namespace}/{name} never counted {healthy}: {st}")
            time.sleep(0.05)

    def add_deployment(
        self, namespace: str, name: str, *, replicas: int, selector: dict[str, str] | None = None
    ) -> str:
        """A Deployment (no controller runs: its ReplicaSet and pods are added by hand)."""
        selector = selector or {"app": name}
        made = self.apps.create_namespaced_deployment(
            namespace, self._workload(name, replicas, selector)
        )
        return str(made.metadata.uid)

    def add_statefulset(
        self, namespace: str, name: str, *, replicas: int, selector: dict[str, str] | None = None
    ) -> str:
        selector = selector or {"app": name}
        body = self._workload(name, replicas, selector)
        body["spec"]["serviceName"] = name
        made = self.apps.create_namespaced_stateful_set(namespace, body)
        return str(made.metadata.uid)

    def add_replicaset(
        self,
        namespace: str,
        name: str,
        *,
        replicas: int,
        selector: dict[str, str],
        owner: tuple[str, str, str] | None = None,
    ) -> str:
        body = self._workload(name, replicas, selector)
        if owner:
            kind, owner_name, uid = owner
            body["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "name": owner_name,
                    "uid": uid,
                    "controller": True,
                }
            ]
        made = self.apps.create_namespaced_replica_set(namespace, body)
        return str(made.metadata.uid)

    @staticmethod
    def _workload(name: str, replicas: int, selector: dict[str, str]) -> Obj:
        return {
            "metadata": {"name": name, "labels": dict(selector)},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": dict(selector)},
                "template": {
                    "metadata": {"labels": dict(selector)},
                    "spec": {"containers": [{"name": "main", "image": "nvcr.io/x:1"}]},
                },
            },
        }

    def service_account(
        self,
        namespace: str,
        name: str,
        *,
        cluster_rules: list[Obj] | None = None,
        rules: list[Obj] | None = None,
    ) -> str:
        """A ServiceAccount bound to a ClusterRole with `cluster_rules` and a Role in its own
        namespace with `rules`; returns a token for it from the TokenRequest API."""
        self.core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
        if cluster_rules is not None:
            role = self.name(f"{name}-{namespace}")
            self.rbac.create_cluster_role({"metadata": {"name": role}, "rules": cluster_rules})
            self.finalizers.append(lambda: self.rbac.delete_cluster_role(role))
            self.rbac.create_cluster_role_binding(
                {
                    "metadata": {"name": role},
                    "roleRef": _ref("ClusterRole", role),
                    "subjects": subject,
                }
            )
            self.finalizers.append(lambda: self.rbac.delete_cluster_role_binding(role))
        if rules is not None:
            self.rbac.create_namespaced_role(
                namespace, {"metadata": {"name": name}, "rules": rules}
            )
            self.rbac.create_namespaced_role_binding(
                namespace,
                {"metadata": {"name": name}, "roleRef": _ref("Role", name), "subjects": subject},
            )
        request = {"spec": {"expirationSeconds": 3600}}
        made = self.core.create_namespaced_service_account_token(name, namespace, request)
        return str(made.status.token)

    # -- reads ----------------------------------------------------------------------------

    def node(self, name: str) -> Obj:
        """The Node as JSON, with the API's own field names (timeAdded, not time_added)."""
        raw = self.core.read_node(name, _preload_content=False)
        return dict(json.loads(raw.data))

    def pods_on(self, node: str, *, terminating: bool = False) -> list[str]:
        """`ns/name` of the pods bound to `node`; those asked to terminate only if told."""
        pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
        return sorted(
            f"{p.metadata.namespace}/{p.metadata.name}"
            for p in pods.items
            if terminating or p.metadata.deletion_timestamp is None
        )

    def node_events(self, node: str) -> list[str]:
        """Reasons of the Events about `node`, oldest first (they live in `default`)."""
        events = self.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.kind=Node,involvedObject.name={node}"
        )
        ordered = sorted(events.items, key=lambda e: int(e.metadata.resource_version))
        return [str(e.reason) for e in ordered]

    def uncordon(self, node: str) -> None:
        """What `kubectl uncordon` sends."""
        self.core.patch_node(node, {"spec": {"unschedulable": None}})

    def cordon(self, node: str) -> None:
        self.core.patch_node(node, {"spec": {"unschedulable": True}})

    # -- teardown -------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Delete the test's nodes, pods and namespaces (nothing finalizes a namespace here,
        so its pods are removed first, at once)."""
        for finalize in reversed(self.finalizers):
            with contextlib.suppress(ApiException):
                finalize()
        for ns in self.namespaces:
            with contextlib.suppress(ApiException):
                self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            with contextlib.suppress(ApiException):
                self.core.delete_namespace(ns)
        for name in self.nodes:
            with contextlib.suppress(ApiException):
                self.core.delete_node(name)
        for api in self.clients:
            api.close()
        self.admin.close()


def _ref(kind: str, name: str) -> Obj:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


def shipped_rules() -> tuple[list[Obj], list[Obj]]:
    """The rules of the shipped ClusterRole and of its leader-election Role."""
    docs = list(yaml.safe_load_all(SHIPPED_RBAC.read_text()))
    [cluster_role] = [d for d in docs if d["kind"] == "ClusterRole"]
    [role] = [d for d in docs if d["metadata"]["name"] == "gpubot-leader-election"]
    return cluster_role["rules"], role["rules"]


class WatchThread:
    """A watch followed in a daemon thread while the `with` block runs; `_run` is the loop,
    which keeps its `watch.Watch` in `self._watch` so leaving the block can stop it."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()
        self._thread.join(timeout=3)


class Kubelet(WatchThread):
    """The kubelet's part in a deletion, for the nodes it is given: a pod with a
    deletionTimestamp on one of them is deleted with grace period 0 (its containers "stopped").

    It watches pods across namespaces in a thread; `nodes` can grow while it runs.
    """

    def __init__(self, cluster: Cluster, nodes: set[str] | None = None) -> None:
        self.api = client.CoreV1Api(cluster.client(record=False))
        self.nodes: set[str] = set(nodes or ())
        self.finished: list[str] = []
        super().__init__("kubelet")

    def _run(self) -> None:
        while not self._stop.is_set():
            self._watch = watch.Watch()
            try:
                # No resourceVersion: each round starts with every pod (ADDED), so a deletion
                # missed between two watches is caught up.
                for event in self._watch.stream(
                    self.api.list_pod_for_all_namespaces, timeout_seconds=2, _request_timeout=5
                ):
                    if self._stop.is_set():
                        return
                    self._finish(event["object"])
            except (ApiException, HTTPError, OSError):
                time.sleep(0.1)

    def _finish(self, pod: Any) -> None:
        meta = pod.metadata
        if meta.deletion_timestamp is None or pod.spec.node_name not in self.nodes:
            return
        try:
            self.api.delete_namespaced_pod(meta.name, meta.namespace, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return
        self.finished.append(f"{meta.namespace}/{meta.name}")


@contextlib.contextmanager
def kubelet_for(cluster: Cluster, *nodes: str) -> Iterator[Kubelet]:
    with Kubelet(cluster, set(nodes)) as k:
        yield k

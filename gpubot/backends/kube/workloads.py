"""Workload reads and scaling on the official client, for idle-GPU reclamation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from kubernetes import client

from gpubot.backends.kube import convert
from gpubot.domain.fleet.workloads import SCALABLE_KINDS, Workload
from gpubot.errors import InputError

MERGE = "application/merge-patch+json"


class Call(Protocol):
    async def __call__(
        self, fn: Callable[..., Any], /, *, verb: str, resource: str, **kw: Any
    ) -> Any: ...


class Scale(Protocol):
    async def __call__(
        self,
        *,
        namespace: str,
        kind: Literal["Deployment", "StatefulSet"],
        name: str,
        replicas: int,
        dry_run: bool = False,
    ) -> int: ...


class KubeWorkloads:
    """Pod → ReplicaSet → Deployment, StatefulSets, and /scale, for KubernetesKubeApi.

    Only the objects on the owner chain are read (pods, replicasets, deployments,
    statefulsets); a Job or DaemonSet is named from the pod's owner reference and never read,
    so the ClusterRole needs no verbs on them.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        call: Call,
        scale: Scale,
        dry_run: bool = False,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self._call = call  # KubernetesKubeApi._call: its thread pool and error translation
        self.scale = scale  # KubernetesKubeApi.scale: the /scale subresource
        self._dry = "All" if dry_run else None

    async def get_workload_owner(self, *, namespace: str, pod: str) -> Workload:
        raw = await self._read_pod(namespace, pod)
        owner = convert.controller_of(raw.metadata)
        if owner is None:
            return convert.bare_pod(convert.pod_info(raw))
        kind, name = owner
        if kind == "ReplicaSet":
            rs = await self._call(
                self.apps.read_namespaced_replica_set,
                verb="get",
                resource=f"replicasets {namespace}/{name}",
                name=name,
                namespace=namespace,
            )
            parent = convert.controller_of(rs.metadata)
            if parent is not None and parent[0] == "Deployment":
                return await self.get_workload(namespace=namespace, kind=parent[0], name=parent[1])
            return Workload(namespace, "ReplicaSet", name, gpus=convert.pod_info(raw).gpu_request)
        if kind in SCALABLE_KINDS:
            return await self.get_workload(namespace=namespace, kind=kind, name=name)
        return Workload(namespace, kind, name, gpus=convert.pod_info(raw).gpu_request, pods=1)

    async def get_workload(self, *, namespace: str, kind: str, name: str) -> Workload:
        if kind == "Pod":
            return convert.bare_pod(convert.pod_info(await self._read_pod(namespace, name)))
        if kind not in SCALABLE_KINDS:
            return Workload(namespace, kind, name)  # not read: gpubot never acts on it
        read = (
            self.apps.read_namespaced_deployment
            if kind == "Deployment"
            else self.apps.read_namespaced_stateful_set
        )
        obj: Any = await self._call(
            read,
            verb="get",
            resource=f"{_plural(kind)} {namespace}/{name}",
            name=name,
            namespace=namespace,
        )
        selector = obj.spec.selector if obj.spec is not None else None
        labels = convert.selector_text(selector.match_labels if selector is not None else None)
        pods = await self._call(
            self.core.list_namespaced_pod,
            verb="list",
            resource=f"pods in {namespace}",
            namespace=namespace,
            label_selector=labels or None,
        )
        infos = [convert.pod_info(p) for p in pods.items] if labels else []
        return convert.workload_info(obj, kind=kind, pods=infos)

    async def scale_workload(
        self,
        *,
        namespace: str,
        kind: str,
        name: str,
        replicas: int,
        annotations: Mapping[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> int:
        """Annotations first (who scaled it, from how many), then /scale: a crash between
        the two leaves the record and the old replicas, and a re-run does the same again."""
        if kind not in SCALABLE_KINDS:
            raise InputError(f"{kind}/{name} has no scale subresource gpubot uses")
        if annotations:
            patch = (
                self.apps.patch_namespaced_deployment
                if kind == "Deployment"
                else self.apps.patch_namespaced_stateful_set
            )
            await self._call(
                patch,
                verb="patch",
                resource=f"{_plural(kind)} {namespace}/{name}",
                name=name,
                namespace=namespace,
                body={"metadata": {"annotations": dict(annotations)}},
                dry_run="All" if dry_run else self._dry,
                _content_type=MERGE,
            )
        scalable: Literal["Deployment", "StatefulSet"] = (
            "Deployment" if kind == "Deployment" else "StatefulSet"
        )
        return await self.scale(
            namespace=namespace, kind=scalable, name=name, replicas=replicas, dry_run=dry_run
        )

    async def _read_pod(self, namespace: str, name: str) -> Any:
        return await self._call(
            self.core.read_namespaced_pod,
            verb="get",
            resource=f"pods {namespace}/{name}",
            name=name,
            namespace=namespace,
        )


def _plural(kind: str) -> str:
    return f"{kind.lower()}s"

"""An install of the chart on a real API server, as `helm install` leaves it, plus what the
kubelet and the scheduler would add: a GPU node, the agent pod bound to it, the bot's pod,
and tokens the API server issues bound to those pods (TokenRequest), as the kubelet would
mount them."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from kube_cluster import Cluster, Obj, ready_pod_status
from kubernetes import client, utils
from kubernetes.client.exceptions import ApiException

REPO = Path(__file__).parents[3]
if str(REPO / "tests" / "integration" / "helm") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "integration" / "helm"))

from gpubot_chart import Rendered, render  # noqa: E402

# Objects of the Prometheus Operator's CRDs: not applied (their CRDs are not installed here).
OPERATOR_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
GPU_LABEL = {"nvidia.com/gpu.present": "true"}


@dataclass(frozen=True)
class Sent:
    """One request the agent's own TokenReview client sent, and the status it got."""

    method: str
    path: str
    status: int


class RecordingTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport, sent: list[Sent]) -> None:
        self.inner, self.sent = inner, sent

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.sent.append(Sent(request.method, request.url.path, response.status_code))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Install:
    """The release, as applied: its namespace, names, and the pods and tokens made for it."""

    c: Cluster
    rendered: Rendered
    namespace: str
    release: str
    tmp: Path
    applied: list[str] = field(default_factory=list)
    pods: dict[str, tuple[str, str]] = field(default_factory=dict)  # role → (name, uid)

    @property
    def config(self) -> Obj:
        config_map = self.rendered.one("ConfigMap", f"{self.release}-config")
        return dict(yaml.safe_load(config_map["data"]["config.yaml"]))

    @property
    def agent_pod_spec(self) -> Obj:
        return dict(self.rendered.one("DaemonSet")["spec"]["template"])

    @property
    def agent_env(self) -> dict[str, str]:
        (container,) = self.agent_pod_spec["spec"]["containers"]
        return {e["name"]: e.get("value", "") for e in container["env"]}

    @property
    def agent_daemonset(self) -> str:
        return str(self.rendered.one("DaemonSet")["metadata"]["name"])

    @property
    def bot_service_account(self) -> str:
        return str(self.rendered.bot["spec"]["template"]["spec"]["serviceAccountName"])

    @property
    def agent_service_account(self) -> str:
        return str(self.agent_pod_spec["spec"]["serviceAccountName"])

    @property
    def audience(self) -> str:
        return str(self.config["clusters"][0]["agent"]["audience"])

    def pod(self, role: str, template: Obj, *, node: str, owner: str | None = None) -> str:
        """A pod from the chart's template, bound to `node` and Running/Ready; `owner`: the
        DaemonSet that made it, as its controller would record."""
        name = f"{template['metadata']['labels']['app.kubernetes.io/component']}-{role}"
        meta: Obj = {"name": name, "labels": template["metadata"]["labels"]}
        if owner is not None:
            ds = self.c.apps.read_namespaced_daemon_set(owner, self.namespace)
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": owner,
                    "uid": ds.metadata.uid,
                    "controller": True,
                }
            ]
        body = {"metadata": meta, "spec": {**template["spec"], "nodeName": node}}
        made = self.c.core.create_namespaced_pod(self.namespace, body)
        self.c.core.patch_namespaced_pod_status(
            name, self.namespace, {"status": ready_pod_status()}
        )
        self.pods[role] = (name, str(made.metadata.uid))
        return name

    def token(self, role: str, service_account: str, *, audience: str | None = None) -> str:
        """A token for `service_account` bound to the pod of `role` (TokenRequest), for
        `audience` (None: the API server's own), as the kubelet requests for a projected
        volume."""
        name, uid = self.pods[role]
        spec: Obj = {
            "expirationSeconds": 600,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid},
        }
        if audience is not None:
            spec["audiences"] = [audience]
        made = self.c.core.create_namespaced_service_account_token(
            service_account, self.namespace, {"spec": spec}
        )
        return str(made.status.token)

    def file(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_text(text + "\n")
        return path


def install(c: Cluster, tmp: Path, values: dict[str, Any] | None = None) -> Install:
    """Render the chart with the Helm engine for a release in a fresh namespace and create
    every object it renders, as `helm install` would (Prometheus Operator objects aside)."""
    namespace = c.namespace("gpubot")
    release = c.name("gpubot")  # cluster-scoped names (ClusterRoles) unique on the server
    rendered = render(values or {}, name=release, namespace=namespace)
    _runtime_class(c)
    done = Install(c, rendered, namespace, release, tmp)
    for obj in rendered.objects:
        if obj["kind"] in OPERATOR_KINDS:
            continue
        utils.create_from_dict(c.admin, obj, namespace=namespace)
        done.applied.append(f"{obj['kind']}/{obj['metadata']['name']}")
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            c.finalizers.append(_deleter(c, obj["kind"], obj["metadata"]["name"]))
    return done


def _runtime_class(c: Cluster) -> None:
    """RuntimeClass `nvidia`, as the GPU Operator installs it (the agent's pods name it)."""
    with contextlib.suppress(ApiException):  # 409: another test made it; it is the same
        client.NodeV1Api(c.admin).create_runtime_class(
            {"metadata": {"name": "nvidia"}, "handler": "nvidia"}
        )


def _deleter(c: Cluster, kind: str, name: str) -> Any:
    if kind == "ClusterRole":
        return lambda: c.rbac.delete_cluster_role(name)
    return lambda: c.rbac.delete_cluster_role_binding(name)


def allowed(
    c: Cluster,
    user: str,
    *,
    verb: str,
    group: str,
    resource: str,
    ns: str = "",
    name: str = "",
    sub: str = "",
) -> bool:
    """What RBAC says to `user` for one request (SubjectAccessReview, as the admin)."""
    review = client.AuthorizationV1Api(c.admin).create_subject_access_review(
        {
            "spec": {
                "user": user,
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "resourceAttributes": {
                    "verb": verb,
                    "group": group,
                    "resource": resource,
                    "namespace": ns,
                    "name": name,
                    "subresource": sub,
                },
            }
        }
    )
    return bool(review.status.allowed)


@contextlib.contextmanager
def no_env() -> Iterator[None]:
    """Settings read GPUBOT_* from the environment: none of the runner's may leak in."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("GPUBOT_")}
    try:
        yield
    finally:
        os.environ.update(saved)

"""Two real `gpubot serve` replicas on one Lease of the real API server and one PostgreSQL
schema, and what a test reads from outside them: the Lease, the store, each replica's console
thread and the API server's own request counters.

Each replica is a process started by PID (reliability_procs), with its own config file that
differs from the other's only in `leader_election.identity` (the pod name in a Deployment).
Slack is off, so each replica prints its incident threads to its log: a step's message
appears in the log of the replica that executed the step.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from control_plane import REPO
from kube_cluster import Cluster, WatchThread
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

if str(REPO / "tests" / "reliability") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "reliability"))

from reliability_procs import (
    PgSchema,
    Procs,
    answers,
    clean_env,
    free_port,
    pg_schema,
    write_config,
)

from gpubot.config import load_settings
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.runbooks.runs import Run, StepState
from gpubot.wiring import build_app

__all__ = ["Counts", "LeaseWatch", "PgSchema", "Procs", "Replicas", "pg_schema"]
LEASE = "gpubot-leader"
# An XID 79 quarantine that needs no node agent: cordon and taint at once, then a drain
# (approval required, as for every drain), looking again every second while it waits.
RUNBOOK = """
name: xid-quarantine
description: cordon, taint and drain a node that reported XID 79
triggers:
  - alertname: GPUXidError
    matchers: ['xid="79"']
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: taint
    action: node.taint
    args: {node: "{{ params.node }}", key: gpubot.io/xid, value: "79", effect: NoSchedule}
    approval: auto
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}", max_poll_seconds: 1}
    approval: required
    approvers: oncall
    timeout: 10m
"""


def xid_alert(
    node: str, *, cluster: str = "lab", fingerprint: str = "7c0a5e21f4b3d9a1"
) -> dict[str, Any]:
    """An Alertmanager v4 webhook body for XID 79 on GPU 3 of `node`, as DCGM labels it
    (each node's alert needs a fingerprint of its own, as Alertmanager gives it)."""
    labels = {
        "alertname": "GPUXidError",
        "cluster": cluster,
        "Hostname": node,
        "UUID": "GPU-9d33a01c-353c-631c-dfd4-3f371200339d",
        "gpu": "3",
        "modelName": "NVIDIA H100 80GB HBM3",
        "severity": "critical",
        "xid": "79",
    }
    return {
        "version": "4",
        "receiver": "gpubot",
        "status": "firing",
        "groupKey": '{}:{alertname="GPUXidError"}',
        "groupLabels": {"alertname": "GPUXidError", "cluster": cluster},
        "commonLabels": labels,
        "commonAnnotations": {},
        "externalURL": "http://127.0.0.1:9093",
        "truncatedAlerts": 0,
        "alerts": [
            {
                "status": "firing",
                "labels": labels,
                "annotations": {"summary": f"GPU 3 on {node} has fallen off the bus (XID 79)"},
                "startsAt": "2026-11-25T10:00:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://127.0.0.1:9090/graph",
                "fingerprint": fingerprint,
            }
        ],
    }


@dataclass(frozen=True)
class Stored:
    """What the shared store holds: runs, step states by id, audit events of the runs."""

    runs: list[Run]
    steps: dict[str, StepState]
    events: list[AuditEvent]

    def kinds(self, kind: str, step: str | None = None) -> list[AuditEvent]:
        return [e for e in self.events if e.kind == kind and (step is None or e.step == step)]


@dataclass
class Replica:
    name: str
    port: int
    config: Path
    log: Path
    started: subprocess.Popen[bytes] | None = None

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        assert self.started is not None, f"{self.name} was not started"
        return self.started

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def executed(self, step: str) -> bool:
        """Whether this replica posted the step's outcome in its (console) thread."""
        return bool(re.search(rf"xid-quarantine > {step} \(node\.\w+\): succeeded", self.output()))


@dataclass
class Replicas:
    """Two `gpubot serve` replicas on the cluster's API server, one Lease, one PostgreSQL schema."""

    cluster: Cluster
    pg: PgSchema
    procs: Procs
    workdir: Path
    lease_seconds: float
    renew_seconds: float = 0.25
    grace_seconds: float = 6.0
    shards: int = 1  # leader_election.shards: more than 1, each replica executes its shards
    replicas: list[Replica] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.namespace = self.cluster.namespace("gpubot")
        (self.workdir / "runbooks").mkdir(exist_ok=True)
        (self.workdir / "runbooks" / "xid-quarantine.yaml").write_text(RUNBOOK)
        kubeconfig = self.cluster.plane.kubeconfig_for(
            self.workdir / "kubeconfig", token=self.cluster.plane.token
        )
        for name in ("replica-a", "replica-b"):
            folder = self.workdir / name
            folder.mkdir(exist_ok=True)
            config = write_config(
                folder / "gpubot.yaml",
                store={"url": self.pg.url},
                runbooks={"dirs": [str(self.workdir / "runbooks")], "builtin": False},
                clusters=[
                    {
                        "name": "lab",
                        "backend": "kubernetes",
                        "context": "lab",
                        "kubeconfig": str(kubeconfig),
                        "agent": {"port": 9400},  # the runbook never calls an agent
                    }
                ],
                leader_election={
                    "enabled": True,
                    "namespace": self.namespace,
                    "identity": name,
                    "lease_seconds": self.lease_seconds,
                    "renew_seconds": self.renew_seconds,
                    "shards": self.shards,
                },
                web={"shutdown_grace_seconds": self.grace_seconds},
                policy={
                    "groups": {"oncall": {"users": ["U1"]}},
                    # The test's nodes share the server with others: no cap in the way.
                    "blast_radius": {"max_cordoned_fraction": 1.0, "max_cordoned_count": 100},
                },
            )
            self.replicas.append(Replica(name, free_port(), config, folder / "serve.log"))

    # -- processes ------------------------------------------------------------------------

    def start(self) -> None:
        """Both at once (each takes a second or two to import), then both answer /healthz."""
        for r in self.replicas:
            r.started = self.procs.spawn(
                [
                    sys.executable,
                    "-m",
                    "gpubot.cli",
                    "serve",
                    "--config",
                    str(r.config),
                    "--port",
                    str(r.port),
                ],
                log=r.log,
                cwd=r.config.parent,
                env=clean_env(),
            )
        for r in self.replicas:
            # A start, not a timing rule: a busy machine may take long to import and build
            # the app, and the wait ends as soon as /healthz answers.
            self.wait(
                lambda r=r: answers(f"{r.url}/healthz"), f"{r.name} to answer /healthz", limit=60
            )

    def named(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    def other(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name != name)

    def post_alert_to_both(self, body: dict[str, Any]) -> list[int]:
        """The same webhook to each replica at the same moment, as two Alertmanagers of an
        HA pair (or one's retry through the Service) would send it."""

        def post(r: Replica) -> int:
            return httpx.post(f"{r.url}/alertmanager", json=body, timeout=10).status_code

        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(post, self.replicas))

    def wait(self, check: Callable[[], bool], what: str, limit: float = 20.0) -> float:
        """Poll `check` until true; the seconds it took. On timeout, the replicas' logs."""
        began = time.monotonic()
        while not check():
            if time.monotonic() - began > limit:
                raise AssertionError(
                    f"timed out after {limit:g}s waiting for {what}\n{self.procs.tail()}"
                )
            time.sleep(0.05)
        return time.monotonic() - began

    # -- the Lease ------------------------------------------------------------------------

    def lease(self) -> tuple[str | None, int]:
        """(holder, leaseTransitions); (None, 0) before anyone created it."""
        try:
            spec = self.cluster.coordination.read_namespaced_lease(LEASE, self.namespace).spec
        except ApiException as exc:
            if exc.status == 404:  # before the first replica wrote it
                return None, 0
            raise
        return spec.holder_identity or None, int(spec.lease_transitions or 0)

    def leader(self) -> Replica:
        """The replica holding the Lease, once one does."""
        self.wait(lambda: self.lease()[0] is not None, "a replica to take the Lease")
        return self.named(str(self.lease()[0]))

    # -- the store ------------------------------------------------------------------------

    def stored(self) -> Stored:
        async def go() -> Stored:
            store = self.pg.open()
            try:
                runs = await store.list_runs()
                steps = {s.step_id: s for r in runs for s in await store.steps(r.id)}
                events = [e for r in runs for e in await store.events(run_id=r.id)]
                return Stored(runs, steps, events)
            finally:
                await store.close()

        return asyncio.run(go())

    def step_is(self, step: str, status: str) -> bool:
        state = self.stored().steps.get(step)
        return state is not None and state.status.value == status

    def approve(self) -> bool:
        """The on-call approver's click, taken as a replica takes it (the service's vote,
        on the shared store) by a third instance that does not lead, as when Slack delivers
        the click to a replica other than the leader; False while no request is pending."""

        async def go() -> bool:
            app = build_app(load_settings(self.replicas[0].config))
            try:
                runs = await app.store.list_runs()
                pending = [
                    a
                    for r in runs
                    for a in await app.store.approvals_for(r.id)
                    if a.status is ApprovalStatus.PENDING
                ]
                if not pending:
                    return False
                outcome = await app.service.vote(
                    approval_id=pending[0].id, user="U1", decision="approve"
                )
                assert outcome.accepted, outcome.message
                return True
            finally:
                await app.aclose()
                for ports in app.clusters.values():
                    ports.kube.close()  # type: ignore[attr-defined]

        return asyncio.run(go())


class LeaseWatch(WatchThread):
    """Every holder the Lease has had, in order, from a watch on it (None: released)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.api = client.CoordinationV1Api(cluster.client(record=False))
        self.namespace = namespace
        self.holders: list[str | None] = []
        super().__init__("lease-watch")

    def _run(self) -> None:
        version = None
        while not self._stop.is_set():
            self._watch = watch.Watch()
            try:
                for event in self._watch.stream(
                    self.api.list_namespaced_lease,
                    self.namespace,
                    field_selector=f"metadata.name={LEASE}",
                    resource_version=version,
                    timeout_seconds=2,
                    _request_timeout=5,
                ):
                    lease = event["object"]
                    version = lease.metadata.resource_version
                    holder = lease.spec.holder_identity or None
                    if not self.holders or self.holders[-1] != holder:
                        self.holders.append(holder)
            except (ApiException, HTTPError, OSError):
                time.sleep(0.1)


# -- what the API server counted ----------------------------------------------------------

_SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")


Counts = Counter[tuple[str, str, str, str]]


def request_counts(cluster: Cluster) -> Counts:
    """apiserver_request_total by (verb, resource/subresource, code, dry_run), from the API
    server's /metrics: every request any client made, the replicas' included."""
    plane = cluster.plane
    reply = httpx.get(
        f"{plane.url}/metrics",
        headers={"Authorization": f"Bearer {plane.token}"},
        verify=ssl.create_default_context(cafile=str(plane.ca)),
        timeout=10,
    )
    reply.raise_for_status()
    raw = reply.text
    counts: Counts = Counter()
    for line in raw.splitlines():
        if m := _SAMPLE.match(line):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
            resource = labels.get("resource", "")
            if labels.get("subresource"):
                resource += "/" + labels["subresource"]
            key = (
                labels.get("verb", ""),
                resource,
                labels.get("code", ""),
                labels.get("dry_run", ""),
            )
            counts[key] += int(float(m["value"]))
    return counts


def delta(before: Counts, after: Counts) -> dict[tuple[str, str, str, str], int]:
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def dump(value: object) -> str:
    return json.dumps(value, default=str, indent=1)

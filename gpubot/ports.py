"""Protocols the engine talks to; real, simulated and fake adapters implement them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol, TypeVar

from gpubot.domain.control.approvals import ApprovalRequest
from gpubot.domain.control.audit import AuditDraft, AuditEvent, ChainHead, ChainProblem
from gpubot.domain.control.signed_votes import Signer, SubmittedVote
from gpubot.domain.control.token_reviews import ReviewedToken
from gpubot.domain.fleet.cluster import (
    FleetView,
    GpuState,
    NodeInfo,
    PodDisruptionBudget,
    PodEvent,
    PodInfo,
    Sample,
    Taint,
)
from gpubot.domain.fleet.workloads import Workload
from gpubot.domain.gpus.evidence import Bundle, EvidencePart, StoredEvidence
from gpubot.domain.gpus.ledger import GpuEvent
from gpubot.domain.incidents.correlation import (
    AlertObservation,
    AlertRecord,
    Incident,
    IncidentStatus,
)
from gpubot.domain.incidents.intake import IntakeOutcome
from gpubot.domain.results import Message
from gpubot.domain.runbooks.runs import Run, RunStatus, RunView, StepState
from gpubot.knowledge.dcgm_diag import DiagReport

T = TypeVar("T")


class Clock(Protocol):
    """Every wait goes through one: gpubot.clock's SystemClock, or its FakeClock in tests."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    async def wait_for(self, aw: Awaitable[T], seconds: float) -> T: ...


class TokenReviewer(Protocol):
    """The API server's TokenReview (authentication.k8s.io/v1): who a bearer token is.

    Raises IdentityUnavailableError when the API server cannot answer (the caller answers 503);
    an answer of "not authenticated" is a ReviewedToken, not an error.
    """

    async def review(self, *, token: str, audience: str) -> ReviewedToken: ...


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_at: datetime


class TokenIssuer(Protocol):
    """The API server's TokenRequest: a token for a ServiceAccount, for one audience,
    optionally bound to a pod (`pod` = (name, uid)). IdentityUnavailableError when it
    cannot."""

    async def issue(
        self,
        *,
        namespace: str,
        service_account: str,
        audience: str,
        seconds: int,
        pod: tuple[str, str] | None = None,
    ) -> IssuedToken: ...


@dataclass(frozen=True)
class PodPlacement:
    """A pod as the API server has it: its uid and the node it is bound to."""

    uid: str
    node: str | None


class PodPlacements(Protocol):
    """Where a pod runs, read from the API server (never from a request)."""

    async def placement(self, *, namespace: str, name: str) -> PodPlacement | None: ...


class NodeOps(Protocol):
    """Read the cluster's nodes and change them: cordon, taints, the notes the bot leaves."""

    async def list_nodes(self) -> list[NodeInfo]: ...

    async def get_node(self, *, node: str, cached: bool = False) -> NodeInfo:
        """`cached`: the copy a watch keeps, where the adapter has a live one (it lags the
        server by the watch's delivery latency: for plans, and for writes that send its
        resource_version back); otherwise, and by default, read from the server."""
        ...

    async def warm(self, *, timeout_s: float) -> bool:
        """Fill what the adapter caches about nodes and their GPU pods (each watch cache's
        first LIST) before the first alert needs it; whether it was ready within `timeout_s`.
        Never raises."""
        ...

    async def gpu_fleet(self) -> FleetView:
        """The GPU nodes and which are cordoned, cheaply (a watch cache, not a LIST per call)."""
        ...

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
        """`dry_run`: the API server validates the change (RBAC, admission) and keeps nothing.
        `expect_version`: the node's resource_version as read; ConflictError when the node
        has changed since ("" writes whatever the node is now)."""
        ...

    async def set_taint(
        self, *, node: str, taint: Taint, present: bool, dry_run: bool = False
    ) -> None: ...

    # Notes the bot leaves on a node: labels/annotations (None deletes one) and Events.
    async def set_node_metadata(
        self,
        *,
        node: str,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None: ...

    async def post_node_event(
        self,
        *,
        node: str,
        reason: str,
        message: str,
        event_type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        """A Kubernetes Event on the Node, so `kubectl describe node` shows what the bot did.
        Best effort and off the caller's path: an adapter may queue it and post it later
        (a failure is logged, never raised), keeping the time it was made."""
        ...

    async def flush_events(self, *, timeout_s: float) -> int:
        """Wait (at most `timeout_s`) for the node Events queued to be posted; how many are
        left unposted. 0 at once where nothing is queued."""
        ...


class AgentAddresses(Protocol):
    """Where a node's agent listens: only what the cluster reports, never an alert's text."""

    async def node_internal_ips(self) -> dict[str, str]:
        """Every Node's InternalIP (status.addresses) by node name; one without is left out."""
        ...

    async def pod_ips_by_node(self, *, namespace: str, selector: str) -> dict[str, str]:
        """Running pods in `namespace` matching the label `selector`: spec.nodeName → podIP."""
        ...


class PodReads(Protocol):
    """Pods, their budgets, logs and events: what drains plan from and triage reads."""

    async def list_pods(
        self, *, node: str | None = None, namespace: str | None = None, cached: bool = False
    ) -> list[PodInfo]:
        """`cached`: the API server may answer from its watch cache (a little behind, and far
        cheaper for it and etcd): for a plan's figures, never for what is evicted or reset."""
        ...

    async def gpu_pods(self, *, node: str) -> list[PodInfo]:
        """The pods on `node` that ask for GPUs, for a plan's figures: from a watch cache
        where the adapter keeps a live one (it lags the server by the watch's latency, and
        costs no request), else a cached LIST. Never for what is evicted or reset."""
        ...

    async def list_pdbs(self, *, namespace: str | None = None) -> list[PodDisruptionBudget]: ...

    async def get_pod(self, *, namespace: str, name: str) -> PodInfo: ...

    async def pod_logs(
        self,
        *,
        namespace: str,
        name: str,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int = 100,
    ) -> str: ...

    async def pod_events(self, *, namespace: str, name: str) -> list[PodEvent]: ...


class Evictions(Protocol):
    """Take pods off a node: through the Eviction API, or deleted where a runbook says so."""

    async def evict(self, *, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        """Evict through the Eviction API; DisruptionBlockedError when a PDB says no."""
        ...

    async def delete_pod(self, *, namespace: str, name: str, grace_seconds: int | None) -> None:
        """Delete without PDB checks: only where a runbook says so explicitly."""
        ...


class Workloads(Protocol):
    """What runs a pod, and scaling it: idle-GPU reclamation."""

    async def get_workload_owner(self, *, namespace: str, pod: str) -> Workload:
        """What runs the pod: Pod → ReplicaSet → Deployment, a StatefulSet, a Job, or the bare
        Pod itself (kind "Pod"), with its replicas and the GPUs its pods hold."""
        ...

    async def get_workload(self, *, namespace: str, kind: str, name: str) -> Workload:
        """One workload by kind and name (NotFoundError when it is gone)."""
        ...

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
        """Set a Deployment's or StatefulSet's replicas through its scale subresource, after
        writing `annotations` on it; returns the replicas it had before."""
        ...


class KubeApi(NodeOps, AgentAddresses, PodReads, Evictions, Protocol):
    """A cluster's API: node operations, agent addresses, pod reads and evictions, which one
    adapter (official client, simulated, fake) implements, and the adapter of its workloads,
    which stands on its own. Code that uses the cluster asks for the role it needs."""

    @property
    def workloads(self) -> Workloads: ...


class NodeAgent(Protocol):
    """GPU reads and actions on one node, through the node agent (NVML)."""

    async def gpus(self, *, node: str) -> list[GpuState]: ...

    async def set_power_limit(self, *, node: str, gpu: int, watts: float) -> GpuState:
        """Within the device's min/max; InputError naming the range otherwise."""
        ...

    async def reset_gpu(self, *, node: str, gpu: int, uuid: str | None = None) -> GpuState:
        """Reset one GPU; PermanentStepError while a process holds it, while another reset of
        it runs, or when `uuid` is given and GPU `gpu` is not that device."""
        ...

    async def diag(self, *, node: str, level: int, gpus: Sequence[int] | None = None) -> DiagReport:
        """DCGM diagnostics (`dcgmi diag -r LEVEL`, 1..3) on `gpus` (None: all): per GPU and
        test, pass/warn/fail/skip with DCGM's messages. PermanentStepError while a process
        holds a GPU it would test, or when DCGM cannot run (dcgmi missing, host engine down)."""
        ...

    async def diag_status(self, *, node: str) -> str | None:
        """None when DCGM diagnostics can run on the node now; else one line why not (dcgmi
        missing, host engine unreachable). GpubotError when the agent cannot be asked."""
        ...

    async def gather_evidence(self, *, node: str) -> list[EvidencePart]:
        """What the node's tools say now, each part bounded in time and size by the agent
        (nvidia-bug-report.sh, nvidia-smi -q -x, the kernel's NVRM/Xid lines), with its
        status: ok, missing, timed_out, truncated or failed. Changes nothing on the node."""
        ...


class KernelLogs(Protocol):
    """A node's kernel messages, read through its agent (journalctl -k)."""

    async def kernel_log(self, *, node: str, since: datetime, until: datetime) -> str:
        """The kernel's lines between `since` and `until`, oldest first, at most the last
        KERNEL_LOG_LINES; GpubotError when the node's agent cannot be asked or cannot read them."""
        ...


class Leadership(Protocol):
    """Which replica may start which steps. Alone it is always this one; in HA the replica
    holding the Lease; with shards, each replica the runs of the shards it holds a Lease on.

    `is_leader()` is for what one replica does for all (the scheduled report, pruning,
    counting votes the CLI stored); `leads(key)` says whether this replica may start the
    steps of the runs with that key (gpubot.domain.runbooks.shards.run_key); `term()` is None
    while this replica leads nothing, and changes each time it gains something to lead (it
    then looks at every unfinished run, as after a start)."""

    def is_leader(self) -> bool: ...

    def leads(self, key: str) -> bool: ...

    def term(self) -> int | None: ...


class SharedCaps(Protocol):
    """The blast-radius caps counted across replicas that execute steps side by side (shards):
    what one replica reserves or runs, the others count."""

    async def reserve_cordon(
        self,
        *,
        cluster: str,
        node: str,
        holder: str,
        now: datetime,
        settle: timedelta,
        decide: Callable[[set[str]], str | None],
    ) -> str | None:
        """Under a lock all replicas take for `cluster`: `decide` is given the nodes other
        holders have a cordon of in flight, or returned within `settle`; when it returns None
        a slot for `node` is reserved for `holder` before the lock is let go. Its reason
        otherwise (nothing reserved)."""
        ...

    async def cordon_returned(self, *, cluster: str, node: str, holder: str, now: datetime) -> None:
        """The cordon of `node` returned (or failed): the others count it for `settle` more."""
        ...

    def exclusive(self, name: str) -> AbstractAsyncContextManager[None]:
        """A lock every replica takes by `name` (a drain's check and its RUNNING mark)."""
        ...


class Metrics(Protocol):
    """Prometheus instant queries."""

    async def query(self, *, promql: str) -> list[Sample]: ...


class ChatNotifier(Protocol):
    """Where incidents are discussed: a Slack thread per incident, or the terminal."""

    async def open_thread(self, *, incident: Incident) -> None: ...

    async def update_root(self, *, incident: Incident, state: str) -> None: ...

    async def post(self, *, incident_id: str | None, message: Message) -> None: ...

    async def post_summary(self, *, key: str, message: Message) -> None:
        """One message in the default channel per `key` (e.g. the held steps of a storm):
        posted the first time, edited in place after."""
        ...

    async def ask_approval(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None: ...

    async def approval_decided(
        self, *, incident_id: str | None, request: ApprovalRequest, message: Message
    ) -> None: ...


class ReportPoster(Protocol):
    """Posts a scheduled or requested report, with an optional PNG chart, outside incidents."""

    async def post_report(
        self, *, channel: str | None, message: Message, chart: bytes | None, filename: str
    ) -> None: ...


class IncidentStore(Protocol):
    async def ingest(
        self, items: Sequence[AlertObservation], *, now: datetime
    ) -> list[IntakeOutcome]: ...

    async def get_incident(self, incident_id: str) -> Incident: ...

    async def list_incidents(
        self, *, status: IncidentStatus | None = None, limit: int = 100
    ) -> list[Incident]: ...

    async def alerts_for(self, incident_id: str) -> list[AlertRecord]: ...

    async def split_fault(
        self, *, incident_id: str, fingerprint: str, key: str, now: datetime
    ) -> tuple[Incident, bool] | None:
        """Move a firing alert into the open incident `key` (opened from it when none):
        that incident and whether it was opened; None when the alert no longer fires there."""
        ...


class RunStore(Protocol):
    async def create_run(
        self, run: Run, steps: Sequence[StepState], *, audit: AuditDraft | None = None
    ) -> tuple[Run, bool]:
        """The run and its steps, unless the incident has a run of that runbook already
        (that one comes back, with False); with `audit`, that event is appended in the
        same transaction, only when the run was created."""

    async def get_run(self, run_id: str) -> Run: ...

    async def list_runs(
        self,
        *,
        statuses: Sequence[RunStatus] | None = None,
        incident_id: str | None = None,
        runbook: str | None = None,
        target: str | None = None,
        since: datetime | None = None,
    ) -> list[Run]: ...

    async def runs_on_target(
        self, *, runbook: str, target: str, since: datetime, active: Sequence[RunStatus]
    ) -> tuple[list[Run], list[Run]]:
        """The runs of `runbook` on `target` created since `since`, and those of any age in
        an `active` status, read in one transaction (one snapshot)."""

    async def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        note: str,
        now: datetime,
        audit: AuditDraft | None = None,
    ) -> Run:
        """Set a run's status; with `audit`, append that event in the same transaction."""

    async def steps(self, run_id: str) -> list[StepState]: ...

    async def run_with_steps(self, run_id: str) -> tuple[Run, list[StepState]]:
        """The run and its steps as one read (one snapshot)."""

    async def save_step(self, state: StepState, *, audit: AuditDraft | None = None) -> None:
        """Upsert a step's state; with `audit`, append that event in the same transaction."""


class ApprovalStore(Protocol):
    async def create_approval(self, request: ApprovalRequest) -> None: ...

    async def get_approval(self, approval_id: str) -> ApprovalRequest: ...

    async def replace_approval(self, request: ApprovalRequest, *, expected_votes: int) -> bool: ...

    async def approvals_for(self, run_id: str) -> list[ApprovalRequest]: ...


class AuditLog(Protocol):
    async def append(self, draft: AuditDraft) -> AuditEvent: ...

    async def events(
        self,
        *,
        incident_id: str | None = None,
        run_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        after_seq: int | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[AuditEvent]: ...

    async def incident_trail(self, incident_id: str) -> tuple[list[AuditEvent], ChainHead | None]:
        """An incident's events and the chain's head, read in one transaction."""
        ...

    async def verify(self) -> list[ChainProblem]: ...

    async def check_key(self) -> None:
        """AuditKeyError when this process's audit key is not the chain's (checked before
        writing, and by the readiness probe)."""

    async def head(self) -> ChainHead | None:
        """The chain head as stored (None if missing): what the thread and log anchor."""
        ...


class SignedVoteStore(Protocol):
    """Break-glass votes the CLI signed and stored, until the server has counted each once."""

    async def submit_vote(self, vote: SubmittedVote) -> bool:
        """Store a pending vote; False when the same signed vote is there already."""
        ...

    async def pending_votes(self) -> list[SubmittedVote]: ...

    async def claim_vote(self, digest: str) -> bool:
        """pending → counting; True for the one process that moved it (it counts it)."""
        ...

    async def mark_verified(self, digest: str, *, signer: str) -> bool:
        """Note the key that verifiably signed it; False when another stored vote with the
        same nonce was verified before (a replay of a vote already used)."""
        ...

    async def settle_vote(self, digest: str, *, accepted: bool, verdict: str, at: datetime) -> None:
        """counting → accepted or refused, with the one line the voter is shown."""
        ...

    async def get_vote(self, digest: str) -> SubmittedVote | None: ...


class VoteSigners(Protocol):
    """The operator keys the server was configured with, and what checks a signature."""

    def configured(self) -> bool: ...

    def verify(self, *, message: bytes, signature: str) -> Signer:
        """The configured signer of `message`; SignatureError (a refusal) otherwise."""
        ...


class GpuLedger(Protocol):
    """The per-GPU health ledger: append-only events keyed by GPU UUID (gpu_history)."""

    async def record_gpu_event(
        self,
        *,
        uuid: str,
        node: str,
        kind: str,
        at: datetime,
        pci_bus_id: str = "",
        gpu_index: int | None = None,
        xid: int | None = None,
        incident_id: str | None = None,
        run_id: str | None = None,
        result: str = "",
        detail: str = "",
        actor: str = "system",
    ) -> GpuEvent:
        """Append one event (kind xid, reset, reboot, diag, service, service_cleared);
        InputError for a bad UUID, kind or bus id; `detail` is cut to one short line."""
        ...

    async def gpu_history(
        self,
        *,
        uuid: str | None = None,
        node: str | None = None,
        since: datetime | None = None,
        limit: int = 1000,
    ) -> list[GpuEvent]:
        """One GPU's events (or every GPU's seen on `node`), oldest first."""
        ...


class EvidenceStore(Protocol):
    """Evidence bundles, each kept with an audit event that records its sha256."""

    async def store_evidence(
        self,
        *,
        node: str,
        cluster: str,
        bundle: Bundle,
        created_at: datetime,
        actor: str,
        reason: str = "",
        incident_id: str | None = None,
        run_id: str | None = None,
        step: str | None = None,
    ) -> StoredEvidence:
        """Keep `bundle` and append its evidence.stored audit event (the bundle's id,
        sha256, size and each part's status, for `actor`, `reason`) in one transaction."""
        ...

    async def list_evidence(
        self,
        *,
        incident_id: str | None = None,
        node: str | None = None,
        run_id: str | None = None,
        limit: int = 200,
    ) -> list[StoredEvidence]:
        """Newest first, without their content."""
        ...

    async def evidence_content(self, evidence_id: int) -> tuple[StoredEvidence, bytes]:
        """NotFoundError when there is no such bundle (or it was pruned)."""
        ...

    async def prune_evidence(self, *, before: datetime, audit: AuditDraft) -> list[int]:
        """Delete bundles created before `before` with `audit` (evidence.pruned) naming
        them, in one transaction; the ids deleted (none: nothing written)."""
        ...


class Store(
    IncidentStore,
    RunStore,
    ApprovalStore,
    AuditLog,
    GpuLedger,
    SignedVoteStore,
    EvidenceStore,
    Protocol,
):
    """Everything that must survive a restart, in one database."""

    async def run_state(self, run_id: str) -> RunView:
        """A run, its steps and whether its incident is open (None: the run has no
        incident), read in one transaction."""
        ...

    async def create_run_read(
        self, run: Run, steps: Sequence[StepState], *, audit: AuditDraft
    ) -> tuple[RunView, bool]:
        """create_run with `audit`, and the run's view (the existing run's, with False,
        when the incident had one) read in the same transaction."""
        ...

    async def save_step_read(self, state: StepState, *, audit: AuditDraft) -> RunView:
        """save_step with `audit`, and the run's view after it, in one transaction."""
        ...

    async def end_run(
        self, run_id: str, *, status: RunStatus, note: str, now: datetime, audit: AuditDraft
    ) -> tuple[Run, list[AuditEvent], ChainHead | None]:
        """update_run with `audit`, then the run's incident's events (none without an
        incident) and the chain's head, in one transaction."""
        ...

    async def incident_with_runs(
        self, incident_id: str
    ) -> tuple[Incident, list[Run], list[AlertRecord]]:
        """An incident, its runs and its alerts, read in one transaction (one snapshot)."""
        ...

    async def rehearse(self, *, now: datetime) -> None:
        """Run the statements of an alert's run once in a transaction rolled back at its
        end, so that the first alert does not pay for compiling them; nothing is kept."""
        ...

    def watch_writes(self, wake: Callable[[], None]) -> bool:
        """Call `wake` (from another thread) soon after another process commits a write to
        the store (a replica's run or vote, the CLI's cancel); False where the store cannot
        tell (SQLite: one process writes it), and `wake` is never called."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class ClusterPorts:
    """The backends of one cluster."""

    name: str
    kube: KubeApi
    agent: NodeAgent
    metrics: Metrics
    # The nodes' kernel logs, where the cluster's agents serve them (None: not available).
    kernel_logs: KernelLogs | None = None
    # The roles of the cluster's API, each what an action or a query needs of it: the kube
    # adapter in each role but workloads, which is its own adapter; set once here so a use
    # is an attribute read, not a call.
    nodes: NodeOps = field(init=False, repr=False, compare=False)
    pods: PodReads = field(init=False, repr=False, compare=False)
    evictions: Evictions = field(init=False, repr=False, compare=False)
    workloads: Workloads = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for role in ("nodes", "pods", "evictions"):
            object.__setattr__(self, role, self.kube)
        object.__setattr__(self, "workloads", self.kube.workloads)

"""An engine for the idle-reclaim tests: SQLite, the simulated fleet, a clock the test holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from waiting import LIMIT_S

from gpubot.backends.recording_chat import Posted, RecordingNotifier
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import idle_alert
from gpubot.backends.store import SqlStore, open_store
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.audit import AuditEvent
from gpubot.domain.control.safety_caps import Policy
from gpubot.domain.fleet.reclaim import ReclaimPolicy
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.results import Button, Message
from gpubot.domain.runbooks.loader import parse_runbook
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.engine.clock import FakeClock
from gpubot.engine.deps import Engine
from gpubot.engine.registry import builtin_registry
from gpubot.engine.service import GpubotService

ROOT = Path(__file__).resolve().parents[3]
RUNBOOK = (ROOT / "runbooks" / "idle-reclaim.yaml").read_text()
OWNER = "U7OWNER"
APPROVERS = ApproverGroup("oncall", users=frozenset({"U1", "U2"}), usergroups=frozenset({"S9"}))
POLICY = ReclaimPolicy(owners={"research": f"<@{OWNER}>"}, prices={"H100": 12.0})
# The simulated fleet's idle research workloads (gpubot/backends/simulated/state.py).
SANDBOX = "vllm-sandbox"  # a Deployment, 1 replica with 4 GPUs on gpu-node-12
BARE = "jupyter-bob"  # a bare pod with 2 GPUs on gpu-node-13


class HeldClock(FakeClock):
    """sleep() returns only once the test has moved time past its end, so a run can be
    caught in the middle of a wait (FakeClock's sleep would pass four hours at once)."""

    def __init__(self, start: datetime | None = None) -> None:
        super().__init__(start)
        self._waiting: list[tuple[datetime, asyncio.Future[None]]] = []
        self._released = False

    def release(self) -> None:
        """From now on sleep() passes at once, as FakeClock's does (for the teardown)."""
        self._released = True
        self.advance(timedelta(days=2))

    @property
    def sleepers(self) -> int:
        return sum(1 for _, f in self._waiting if not f.done())

    def advance(self, delta: timedelta) -> None:
        super().advance(delta)
        for due, waiter in list(self._waiting):
            if due <= self.now():
                self._waiting.remove((due, waiter))
                if not waiter.done():
                    waiter.set_result(None)

    async def sleep(self, seconds: float) -> None:
        if self._released:
            await FakeClock.sleep(self, seconds)
            return
        self.slept.append(seconds)
        due = self.now() + timedelta(seconds=seconds)
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append((due, waiter))
        await waiter


class KeepingNotifier(RecordingNotifier):
    """RecordingNotifier that also keeps each posted Message, buttons included."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[Message] = []

    async def post(self, *, incident_id: str | None, message: Message) -> None:
        self.messages.append(message)
        await super().post(incident_id=incident_id, message=message)


@dataclass
class Reclaimer:
    service: GpubotService
    store: SqlStore
    notifier: KeepingNotifier
    cluster: SimulatedCluster
    clock: HeldClock
    runs: list[Run] = field(default_factory=list)

    async def until(self, predicate: Callable[[], Any], *, within: float = LIMIT_S) -> None:
        """Poll an async or plain predicate while the run advances in the background."""
        deadline = time.monotonic() + within
        while True:
            value = predicate()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the run never got there")
            await asyncio.sleep(0.01)

    async def steps(self, run_id: str) -> dict[str, str]:
        return {s.step_id: s.status.value for s in await self.store.steps(run_id)}

    async def in_grace(self, run_id: str) -> None:
        """Wait until the run sleeps inside its grace period."""

        async def sleeping() -> bool:
            return (await self.steps(run_id)).get("grace") == "running" and self.clock.sleepers > 0

        await self.until(sleeping)

    async def ended(self, run_id: str) -> Run:
        async def done() -> bool:
            run = await self.store.get_run(run_id)
            return run.status.finished or run.status is RunStatus.WAITING_APPROVAL

        await self.until(done)
        # The status is stored before the thread hears of it: let the advance finish too.
        await self.until(lambda: not self.service.executor.busy(run_id))
        return await self.store.get_run(run_id)

    async def asked(self) -> Posted:
        """The one approval request, once it has been posted."""
        await self.until(lambda: self.notifier.of("ask_approval"))
        [ask] = self.notifier.of("ask_approval")
        return ask

    async def command(self, pod: str, namespace: str = "research", **args: str) -> Run:
        _plan, run = await self.service.start_command_run(
            runbook="idle-reclaim",
            args={"namespace": namespace, "pod": pod, **args},
            requested_by="U3",
            cluster="sim",
        )
        assert run is not None
        return run

    async def alert(self, pod: str, namespace: str = "research") -> Run:
        body = idle_alert(self.cluster, namespace=namespace, pod=pod)
        summary = await self.service.ingest(AlertmanagerPayload.model_validate(body))
        await self.service.process(summary)
        [run] = [r for r in await self.store.list_runs() if r.id not in {x.id for x in self.runs}]
        self.runs.append(run)
        return run

    def buttons(self) -> list[Button]:
        return [b for m in self.notifier.messages for b in m.blocks if isinstance(b, Button)]

    async def events(self, run_id: str, kind: str | None = None) -> list[AuditEvent]:
        found = await self.store.events(run_id=run_id)
        return [e for e in found if kind is None or e.kind == kind]

    def pod_names(self, namespace: str = "research") -> set[str]:
        return {p.name for p in self.cluster.snapshot().pods if p.namespace == namespace}

    def pod_of(self, prefix: str, namespace: str = "research") -> str:
        """The live name of the pod whose name starts with `prefix` (Deployments add hashes)."""
        [name] = [n for n in self.pod_names(namespace) if n.startswith(prefix)]
        return name


@asynccontextmanager
async def reclaimer(
    tmp_path: Path,
    *,
    policy: ReclaimPolicy = POLICY,
    cluster: SimulatedCluster | None = None,
    store: SqlStore | None = None,
    clock: HeldClock | None = None,
    runbook: str = RUNBOOK,
) -> AsyncIterator[Reclaimer]:
    cluster = cluster or SimulatedCluster.default()
    clock = clock or HeldClock()
    store = store or open_store(f"sqlite:///{tmp_path}/reclaim.db")
    notifier = KeepingNotifier()
    engine = Engine(
        store=store,
        registry=builtin_registry(reclaim=policy),
        runbooks={"idle-reclaim": parse_runbook(runbook, path=tmp_path / "rb.yaml").runbook},
        clusters={"sim": cluster.ports()},
        notifier=notifier,
        clock=clock,
        policy=Policy(groups={"oncall": APPROVERS}),
    )
    service = GpubotService(engine)
    try:
        yield Reclaimer(service, store, notifier, cluster, clock)
    finally:
        clock.release()  # no wait outlives the test
        await asyncio.wait_for(service.wait_idle(), timeout=30)
        await store.close()

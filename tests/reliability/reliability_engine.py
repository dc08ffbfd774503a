"""An in-process gpubot over whatever backends a fault test wires in, and tools to steer it:
a fake clock that can act on its N-th sleep, and an ASGI app served on a chosen port."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import uvicorn
from waiting import LIMIT_S, wait_until

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.safety_caps import AttemptCap, BlastRadius, Policy
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.runbooks.loader import parse_runbook
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.engine.clock import FakeClock
from gpubot.engine.deps import Engine
from gpubot.engine.registry import builtin_registry
from gpubot.engine.service import GpubotService
from gpubot.ports import Clock, ClusterPorts, Store

XID79 = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager" / "xid79_firing.json"
ONCALL = ApproverGroup("oncall", users=frozenset({"U1", "U2"}), usergroups=frozenset())


class HookClock(FakeClock):
    """FakeClock whose N-th sleep (1-based) first runs `hooks[N]`: the fault clears while
    the executor waits to retry, as a dependency comes back between two attempts."""

    def __init__(self, hooks: dict[int, Callable[[], None]] | None = None) -> None:
        super().__init__()
        self.hooks = hooks or {}

    async def sleep(self, seconds: float) -> None:
        if hook := self.hooks.get(len(self.slept) + 1):
            hook()
        await super().sleep(seconds)


@dataclass
class Bot:
    service: GpubotService
    store: Store
    notifier: RecordingNotifier

    async def alert(self, payload: bytes | None = None) -> None:
        """The XID 79 fixture (gpu-node-07, GPU 3) arrives, as through the webhook."""
        body = AlertmanagerPayload.model_validate_json(payload or XID79.read_bytes())
        await self.service.process(await self.service.ingest(body))

    async def only_run(self, limit: float = LIMIT_S) -> Run:
        """The one run, once it stopped moving (finished, or waiting for a person)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while True:
            await self.service.wait_idle()
            [run] = await self.store.list_runs()
            if run.status is not RunStatus.RUNNING or loop.time() > deadline:
                return run
            await asyncio.sleep(0.02)

    def thread(self) -> str:
        return "\n".join(c.text for c in self.notifier.calls)


def make_bot(
    *,
    store: Store,
    kube: Any,
    agent: Any,
    metrics: Any,
    runbook: str,
    clock: Clock | None = None,
    blast: BlastRadius | None = None,
) -> Bot:
    """The engine as wiring builds it, with these backends and one runbook."""
    notifier = RecordingNotifier()
    loaded = parse_runbook(runbook, path=Path("test-runbook.yaml")).runbook
    engine = Engine(
        store=store,
        registry=builtin_registry(),
        runbooks={loaded.name: loaded},
        clusters={"sim": ClusterPorts("sim", kube, agent, metrics)},
        notifier=notifier,
        clock=clock or FakeClock(),
        policy=Policy(
            groups={"oncall": ONCALL},
            blast=blast or BlastRadius(max_cordoned_count=4, max_cordoned_fraction=0.5),
            attempts=AttemptCap(max_attempts=3, window=timedelta(hours=24)),
        ),
    )
    return Bot(GpubotService(engine), store, notifier)


@contextmanager
def serve_asgi(app: Any, port: int) -> Iterator[None]:
    """Serve `app` on 127.0.0.1:`port` in a thread (a dependency coming up) until the end."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started, "the in-process server to listen")
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()

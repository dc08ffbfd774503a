"""`gpubot demo`: an XID 79 incident end to end, on the simulated cluster, in the terminal."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Literal

import httpx

from gpubot.backends.simulated import SimulatedCluster, simulated_state
from gpubot.backends.simulated.scenarios import fail_diag, inject_xid, recover_node
from gpubot.config import load_settings
from gpubot.domain.runbooks.runs import Run, RunStatus
from gpubot.web.server import make_server
from gpubot.wiring import App, build_app

APPROVER = "U0DEMOSRE1"
NODE, GPU = "gpu-node-07", 3
# The second incident: the reset works, DCGM's diagnostics do not pass, the node stays out.
BAD_NODE, BAD_GPU = "gpu-node-11", 5
DIAG_MESSAGE = (
    "GPU 5 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. "
    "Reset GPU. Restart DCGM. Rerun diagnostics."
)


def _say(text: str) -> None:
    print(f"\n▶ {text}", flush=True)


async def _wait_for(
    app: App, statuses: tuple[RunStatus, ...], limit: float = 10.0, *, target: str = NODE
) -> Run:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        await app.service.wait_idle()
        runs = [r for r in await app.store.list_runs() if r.target == target]
        if runs and runs[0].status in statuses:
            return runs[0]
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the run did not reach {', '.join(s.value for s in statuses)}")


def _decide(interactive: bool, step: str) -> Literal["approve", "deny"] | None:
    """The decision on one gated step: the simulated approver's, or the one typed at the
    terminal; None when stdin has no answer (nothing is recorded then)."""
    if not interactive:
        print(f"  simulated approver <@{APPROVER}> (not a person) clicks Approve on `{step}`")
        return "approve"
    while True:
        try:
            answer = input(f"\nApprove step `{step}`? [approve/deny] ").strip().lower()
        except EOFError:
            return None
        if answer in ("approve", "a", "yes", "y", "deny", "d", "no", "n"):
            decision: Literal["approve", "deny"] = "approve" if answer[0] in "ay" else "deny"
            print(f"  typed at the terminal: {decision} (recorded as <@{APPROVER}>)")
            return decision


class NoAnswerError(Exception):
    """stdin ended before an approval was answered: the demo stops, nothing recorded."""


async def _decide_gated_steps(app: App, run: Run, *, interactive: bool, target: str) -> Run:
    """Each step that waits for approval is decided on its own (the thread shows the
    outcome); the run as it stands once none waits."""
    via = {"via": "terminal" if interactive else "simulated approver"}
    while run.status is RunStatus.WAITING_APPROVAL:
        request = (await app.store.approvals_for(run.id))[-1]
        decision = _decide(interactive, request.step_id)
        if decision is None:
            raise NoAnswerError(
                f"no answer on stdin: nothing recorded; run {run.id} still waits for "
                f"approval of `{request.step_id}`. Demo stopped."
            )
        outcome = await app.service.vote(
            approval_id=request.id, user=APPROVER, decision=decision, via=via
        )
        if not outcome.accepted:
            print(f"  {outcome.message}")
        run = await _wait_for(app, (RunStatus.WAITING_APPROVAL, *_FINAL), target=target)
    return run


async def demo(*, interactive: bool = False) -> int:
    with tempfile.TemporaryDirectory(prefix="gpubot-demo-") as tmp:
        settings = load_settings(
            None,
            store={"url": f"sqlite:///{Path(tmp) / 'gpubot.db'}"},
            clusters=[
                {"name": "sim", "backend": "simulated", "state_file": str(Path(tmp) / "sim.json")}
            ],
            policy={"groups": {"oncall": {"users": [APPROVER]}}},
            slack={"mode": "off"},
        )
        app = build_app(settings, out=sys.stdout)
        try:
            return await _scenario(app, interactive=interactive)
        finally:
            await app.aclose()


async def _scenario(app: App, *, interactive: bool) -> int:
    cluster = simulated_state(app.clusters["sim"])
    _say(
        f"Simulated cluster 'sim': {len(cluster.node_names())} nodes x 8 NVIDIA H100 80GB HBM3. "
        f"Injecting XID 79 on {NODE} GPU {GPU}."
    )
    inject_xid(cluster, node=NODE, gpu=GPU, xid=79)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = make_server(
        app.service,
        host="127.0.0.1",
        port=port,
        webhook_token=None,
        max_body_bytes=settings_max(app),
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 (uvicorn exposes no event for this)
        await asyncio.sleep(0.02)
    try:
        body = resources.files("gpubot.demo").joinpath("xid79_firing.json").read_bytes()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            _say(f"Alertmanager posts an XID 79 alert to http://127.0.0.1:{port}/alertmanager")
            reply = await client.post(
                "/alertmanager", content=body, headers={"content-type": "application/json"}
            )
            print(f"  HTTP {reply.status_code} {reply.text}")
            reply = await client.post(
                "/alertmanager", content=body, headers={"content-type": "application/json"}
            )
            print(
                f"  Alertmanager re-sends it (repeat_interval): "
                f"HTTP {reply.status_code} {reply.text}"
            )
            run = await _wait_for(app, (RunStatus.WAITING_APPROVAL, *_FINAL))
            # Each approval step (drain, GPU reset, untaint, uncordon) is decided on its own.
            run = await _decide_gated_steps(app, run, interactive=interactive, target=NODE)
            _say(f"Run {run.id} finished: {run.status.value}. The alert then resolves.")
            recover_node(cluster, node=NODE)
            resolved = json.loads(body)
            resolved["status"] = "resolved"
            for alert in resolved["alerts"]:
                alert["status"], alert["endsAt"] = "resolved", "2026-11-22T02:31:00.541Z"
            reply = await client.post("/alertmanager", json=resolved)
            print(f"  HTTP {reply.status_code} {reply.text}")
            await app.service.wait_idle()
            await _bad_gpu(app, client, cluster, body, interactive=interactive)
    except NoAnswerError as exc:
        _say(str(exc))
        return 1
    finally:
        server.should_exit = True
        await serving
    return await _print_audit(app)


async def _bad_gpu(
    app: App,
    client: httpx.AsyncClient,
    cluster: SimulatedCluster,
    body: bytes,
    *,
    interactive: bool,
) -> None:
    """XID 79 on another node whose GPU resets but fails DCGM's diagnostics: kept out."""
    _say(
        f"Second incident: XID 79 on {BAD_NODE} GPU {BAD_GPU}. Its reset will work, but "
        "DCGM diagnostics will fail its memory test (simulated)."
    )
    inject_xid(cluster, node=BAD_NODE, gpu=BAD_GPU, xid=79)
    fail_diag(cluster, node=BAD_NODE, gpu=BAD_GPU, test="memory", message=DIAG_MESSAGE)
    uuid = (await cluster.agent.gpus(node=BAD_NODE))[BAD_GPU].uuid
    await client.post("/alertmanager", json=_alert_for(body, BAD_NODE, BAD_GPU, uuid))
    run = await _wait_for(app, (RunStatus.WAITING_APPROVAL, *_FINAL), target=BAD_NODE)
    run = await _decide_gated_steps(app, run, interactive=interactive, target=BAD_NODE)
    node = await cluster.kube.get_node(node=BAD_NODE)
    state = "cordoned and tainted" if node.unschedulable and node.taints else "released"
    _say(f"Run {run.id} ended {run.status.value}: {BAD_NODE} is {state}.")
    _say(f"GPU health ledger of {uuid} (gpubot gpus history {uuid})")
    for event in await app.store.gpu_history(uuid=uuid):
        print(f"  {event.line()}")


def _alert_for(body: bytes, node: str, gpu: int, uuid: str) -> dict[str, object]:
    """The demo's alert, for another node and GPU (Alertmanager grouping by Hostname)."""
    data = json.loads(body)
    labels = {"Hostname": node, "gpu": str(gpu), "UUID": uuid, "device": f"nvidia{gpu}"}
    data["groupLabels"] = {**data["groupLabels"], "Hostname": node}
    data["groupKey"] = f'{{}}:{{alertname="GPUXidError", cluster="sim", Hostname="{node}"}}'
    data["commonLabels"] = {**data["commonLabels"], **labels}
    for alert in data["alerts"]:
        alert["labels"] = {**alert["labels"], **labels}
        alert["fingerprint"] = "5d2e8f0a9b1c3e47"
        alert["annotations"] = {
            **alert["annotations"],
            "summary": f"GPU {gpu} on {node} has fallen off the bus (XID 79)",
        }
    return dict(data)


_FINAL = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.NEEDS_HUMAN)


def settings_max(app: App) -> int:
    return app.settings.web.max_body_bytes


async def _print_audit(app: App) -> int:
    """The chain verified. Each run's thread already showed its trail (the end message), so
    the events are not listed again here."""
    events = await app.store.events()
    problems = await app.store.verify()
    _say("Audit verification (gpubot audit verify; each run's trail is in its thread above)")
    if problems:
        for problem in problems:
            print(f"  FAILED: {problem}")
        return 1
    head = events[-1] if events else None
    where = f", chain head seq {head.seq} / {head.hash[:12]}" if head is not None else ""
    print(f"  audit trail verified: {len(events)} events, hash chain intact{where}")
    return 0

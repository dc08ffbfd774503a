"""Instructions gpubot executes per XID alert, counted by valgrind's callgrind: repeatable.

Prints one JSON line. Times and CPU seconds on a shared 2-core machine move by half from one
run to the next; instruction counts do not (the same count twice, whatever else runs). The
flow: the real web app (POST /alertmanager through httpx's ASGI transport), build_app's
service with SQLite in a temporary directory, the simulated cluster's 16 nodes, and one
runbook that cordons the node an XID alert names. A round sends one single-alert webhook
per node, 16 at a time, waits until every run has ended, then resolves the 16 alerts and
uncordons the nodes.

The figure is (instructions of `--rounds` + 1 rounds minus instructions of 1 round) / alerts:
start-up and first-use costs cancel out. Baseline, same run and same subtraction: what the
simulated cluster itself spends per alert (a cordon and an uncordon, each copying its state),
straight on its KubeApi; the difference is gpubot's own work.

Needs valgrind (Debian's package); without it the line says so and the script exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _report import REPO, emit
from _xid_cordon import RUNBOOK, Sink

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def body(template: dict[str, Any], node: str, serial: int, status: str) -> bytes:
    alert = json.loads(json.dumps(template["alerts"][0]))
    alert["labels"]["Hostname"] = node
    alert["fingerprint"] = f"{serial:016x}"
    alert["status"] = status
    if status == "resolved":
        alert["endsAt"] = "2026-12-02T00:00:00Z"
    return json.dumps({**template, "alerts": [alert], "status": status}).encode()


async def flow(rounds: int, bare: bool) -> int:
    """`rounds` rounds of the flow (or, `bare`, of the cordon call alone); the alerts sent."""
    import httpx

    from gpubot.backends.simulated import SimulatedCluster
    from gpubot.config import load_settings
    from gpubot.web.app import create_app
    from gpubot.wiring import build_app

    sim = SimulatedCluster.default()
    nodes = sorted(n.name for n in await sim.kube.list_nodes())
    if bare:
        for _ in range(rounds):
            for node in nodes:  # the flow's cordon, then its reset's uncordon
                await sim.kube.set_unschedulable(node=node, value=True, actor="b", reason="b")
            for node in nodes:
                await sim.kube.set_unschedulable(node=node, value=False, actor="b", reason="b")
        return rounds * len(nodes)
    template = json.loads((REPO / "gpubot" / "demo" / "xid79_firing.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "runbooks").mkdir()
        (Path(tmp) / "runbooks" / "xid-cordon.yaml").write_text(RUNBOOK)
        settings = load_settings(
            None,
            store={"url": f"sqlite:///{Path(tmp) / 'cost.db'}"},
            slack={"mode": "off"},
            runbooks={"builtin": False, "dirs": [str(Path(tmp) / "runbooks")]},
            policy={
                "blast_radius": {"max_cordoned_fraction": 1.0, "max_cordoned_count": 1000},
                "attempts": {"max_attempts": 1_000_000},
            },
        )
        app = build_app(settings, clusters={"sim": sim.ports()}, out=Sink())
        transport = httpx.ASGITransport(app=create_app(app.service))
        headers = {"content-type": "application/json"}
        async with httpx.AsyncClient(transport=transport, base_url="http://cost") as web:

            async def send(node: str, serial: int, status: str) -> None:
                reply = await web.post(
                    "/alertmanager", content=body(template, node, serial, status), headers=headers
                )
                if reply.status_code != 200:
                    raise RuntimeError(f"HTTP {reply.status_code}: {reply.text}")

            for r in range(rounds):
                first = r * len(nodes)
                await asyncio.gather(*(send(n, first + i, "firing") for i, n in enumerate(nodes)))
                await app.service.wait_idle()
                cordoned = [n for n in nodes if (await sim.kube.get_node(node=n)).unschedulable]
                if len(cordoned) != len(nodes):
                    raise RuntimeError(f"round {r}: {len(cordoned)} of {len(nodes)} cordoned")
                for i, n in enumerate(nodes):
                    await send(n, first + i, "resolved")
                await app.service.wait_idle()
                for n in nodes:
                    await sim.kube.set_unschedulable(node=n, value=False, actor="b", reason="b")
        await app.service.shutdown(grace_seconds=1.0)
    return rounds * len(nodes)


def counted(rounds: int, *, bare: bool) -> tuple[int, int]:
    """(instructions, alerts) of one run of this script's flow under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={Path(tmp) / 'out'}",
            sys.executable,
            __file__,
            "--inner",
            str(rounds),
            *(["--bare"] if bare else []),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run failed: {done.stderr[-2000:]}")
    alerts = int(done.stdout.strip().splitlines()[-1])
    return int(found.group(1).replace(",", "")), alerts


def per_alert(rounds: int, *, bare: bool) -> float:
    one, one_alerts = counted(1, bare=bare)
    many, many_alerts = counted(rounds + 1, bare=bare)
    return (many - one) / (many_alerts - one_alerts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds counted (16 alerts each)")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:  # the run under callgrind
        sys.modules["sniffio"] = None  # type: ignore[assignment]  # as benchmarks/fleet.py
        print(asyncio.run(flow(args.inner, args.bare)))
        return
    if shutil.which("valgrind") is None:
        print("alert_cost: valgrind is not installed (Debian: apt-get install valgrind)")
        sys.exit(2)
    alert = per_alert(args.rounds, bare=False)
    bare = per_alert(args.rounds, bare=True)
    emit(
        "alert_cost",
        targets={},
        alerts_counted=args.rounds * 16,
        instructions_per_alert=round(alert),
        gpubot_own_instructions_per_alert=round(alert - bare),
        baseline={"simulated_cordon_and_uncordon_instructions": round(bare)},
    )


if __name__ == "__main__":
    main()

"""Memory after storing 10,000 incidents, and the start-up time of gpubot's commands.

Prints one JSON line. A fresh interpreter (this script with --worker) imports what
`gpubot serve` loads and notes its RSS (the baseline), then builds the app (SQLite in a
temporary directory, the shipped runbooks, no Slack: console output to nowhere), takes
10,000 alerts about 10,000 nodes through the service as the web hook does (ingest, then
the follow-up: audit event, thread, runbook match), and notes RSS again and the peak.
Then the start-up of the commands an operator types: each runs 7 times (--runs), as does
`python -c pass` (the interpreter's own start), with bytecode cached as an installed gpubot
has it; the medians are reported. The ones that need no cluster must answer in 0.5 s;
`plan` builds the app on the simulated cluster, 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import REPO, at_most, emit

PER_PAYLOAD = 100


def memory_mb() -> dict[str, float]:
    """VmRSS (now) and VmHWM (peak) of this process, in MiB (Linux /proc)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = round(int(value.split()[0]) / 1024, 1)
    return {"rss_mb": fields["VmRSS"], "peak_mb": fields["VmHWM"]}


class Sink(io.StringIO):
    def write(self, text: str) -> int:
        return len(text)


def payload(first: int, count: int) -> bytes:
    alerts = [
        {
            "status": "firing",
            "labels": {
                "alertname": "GPUMemoryNearFull",
                "cluster": "sim",
                "severity": "warning",
                "Hostname": f"fleet-node-{n:05d}",
                "gpu": str(n % 8),
            },
            "annotations": {"summary": f"GPU {n % 8} memory on fleet-node-{n:05d} is 97% used"},
            "startsAt": "2026-11-22T01:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph",
            "fingerprint": f"{n:012x}f00d",
        }
        for n in range(first, first + count)
    ]
    return json.dumps(
        {
            "version": "4",
            "groupKey": '{}:{alertname="GPUMemoryNearFull"}',
            "status": "firing",
            "receiver": "gpubot",
            "groupLabels": {"alertname": "GPUMemoryNearFull"},
            "commonLabels": {},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093",
            "truncatedAlerts": 0,
            "alerts": alerts,
        }
    ).encode()


async def store_incidents(n: int) -> dict[str, Any]:
    """The worker: RSS after the imports, then after n incidents went through the service."""
    import gpubot.web.server  # noqa: F401  (what `gpubot serve` loads, with the wiring)
    from gpubot.config import load_settings
    from gpubot.domain.incidents.alerts import AlertmanagerPayload
    from gpubot.wiring import build_app

    baseline = memory_mb()
    with tempfile.TemporaryDirectory(prefix="gpubot-bench-") as tmp:
        settings = load_settings(
            None, store={"url": f"sqlite:///{tmp}/footprint.db"}, slack={"mode": "off"}
        )
        app = build_app(settings, out=Sink())
        started = time.perf_counter()
        try:
            for first in range(0, n, PER_PAYLOAD):
                body = payload(first, min(PER_PAYLOAD, n - first))
                await app.service.receive(AlertmanagerPayload.model_validate_json(body))
            await app.service.wait_idle()
            stored = len(await app.store.list_incidents(limit=n + 1))
            elapsed = time.perf_counter() - started
            after = memory_mb()
        finally:
            await app.aclose()
    return {"baseline": baseline, "after": after, "incidents": stored, "seconds": elapsed}


def median_wall(
    argv: list[str], runs: int, *, check: bool = True, env: dict[str, str] | None = None
) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=check, stdout=subprocess.DEVNULL, cwd=REPO, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def gpubot_command() -> list[str]:
    script = Path(sys.executable).with_name("gpubot")
    if script.exists():
        return [str(script)]
    found = shutil.which("gpubot")
    return [found] if found else [sys.executable, "-m", "gpubot.cli"]


# name: (arguments, target in seconds). LOG is replaced by a CUDA OOM log in a temporary file.
COMMANDS: dict[str, tuple[list[str], float]] = {
    "help": (["--help"], 0.5),
    "version": (["--version"], 0.5),
    "xid_explain": (["xid", "explain", "79"], 0.5),
    "triage_oom": (["triage", "oom", "--log", "LOG"], 0.5),
    "runbooks_validate": (["runbooks", "validate", str(REPO / "runbooks")], 0.5),
    "plan_runbook": (["plan", "--runbook", "xid79", "--param", "node=gpu-node-01"], 1.5),
}
OOM_LOG = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)\n"


def installed_env(tmp: str) -> dict[str, str]:
    """The environment of an installed gpubot: modules compiled to bytecode once and reused
    (pip does that at install). A shell with PYTHONDONTWRITEBYTECODE=1 would compile every
    module on every start; the cache goes to a temporary directory, not the source tree."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")}


def command_walls(runs: int) -> dict[str, float]:
    """The median wall time of each command in COMMANDS (a plan exits 1 on problems: allowed),
    after one run that fills the bytecode cache; `python -c pass` under the same environment."""
    walls = {}
    with tempfile.TemporaryDirectory(prefix="gpubot-bench-") as tmp:
        env = installed_env(tmp)
        log = Path(tmp) / "oom.log"
        log.write_text(OOM_LOG)
        for name, (args, _) in COMMANDS.items():
            argv = [*gpubot_command(), *(str(log) if a == "LOG" else a for a in args)]
            median_wall(argv, 1, check=False, env=env)
            walls[name] = median_wall(argv, runs, check=False, env=env)
        walls["python_c_pass"] = median_wall([sys.executable, "-c", "pass"], runs, env=env)
    return walls


def main(n: int, runs: int) -> None:
    worker = subprocess.run(
        [sys.executable, __file__, "--worker", "--n", str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    memory = json.loads(worker.stdout)
    walls = command_walls(runs)
    python_s = walls.pop("python_c_pass")
    after = memory["after"]["rss_mb"]
    emit(
        "footprint",
        incidents=memory["incidents"],
        rss_after_incidents_mb=after,
        peak_rss_mb=memory["after"]["peak_mb"],
        baseline_rss_after_import_mb=memory["baseline"]["rss_mb"],
        growth_mb=round(after - memory["baseline"]["rss_mb"], 1),
        store_seconds=round(memory["seconds"], 1),
        **{f"{name}_wall_s": round(wall, 3) for name, wall in walls.items()},
        baseline_python_c_pass_s=round(python_s, 3),
        targets={
            "rss_after_incidents_mb": at_most(after, 150.0),
            **{
                f"{name}_wall_s": at_most(round(walls[name], 3), limit)
                for name, (_, limit) in COMMANDS.items()
            },
        },
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="incidents (default 10000)")
    parser.add_argument("--runs", type=int, default=7, help="--help timings (default 7)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(store_incidents(args.n))))
    else:
        main(args.n, args.runs)

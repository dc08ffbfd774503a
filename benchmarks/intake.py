"""Alertmanager intake throughput and latency: gpubot vs a bare Starlette 200, in one run.

Prints one JSON line. Each request is a 10-alert payload with fresh fingerprints, so every
alert is stored durably (deduplicated intake, SQLite WAL) before the 2xx.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REQUESTS = int(os.environ.get("BENCH_REQUESTS", "400"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "8"))
ALERTS_PER_PAYLOAD = 10
HERE = Path(__file__).parent


def payload(n: int) -> bytes:
    alerts = [
        {
            "status": "firing",
            "labels": {
                "alertname": "GPUTemperatureHigh",
                "cluster": "sim",
                "severity": "warning",
                "Hostname": f"gpu-node-{(n * 10 + i) % 100:03d}",
                "gpu": str(i % 8),
            },
            "annotations": {"summary": "hot"},
            "startsAt": "2026-11-22T01:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus/graph",
            "fingerprint": f"{n:08x}{i:08x}",
        }
        for i in range(ALERTS_PER_PAYLOAD)
    ]
    return json.dumps(
        {
            "version": "4",
            "groupKey": f'{{}}:{{n="{n}"}}',
            "status": "firing",
            "receiver": "gpubot",
            "groupLabels": {},
            "commonLabels": {},
            "commonAnnotations": {},
            "externalURL": "",
            "truncatedAlerts": 0,
            "alerts": alerts,
        }
    ).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def drive(port: int) -> dict[str, float]:
    bodies = [payload(n) for n in range(REQUESTS)]
    latencies: list[float] = []
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:

        async def worker() -> None:
            while not queue.empty():
                body = queue.get_nowait()
                started = time.perf_counter()
                reply = await client.post(
                    "/alertmanager", content=body, headers={"content-type": "application/json"}
                )
                latencies.append(time.perf_counter() - started)
                if reply.status_code != 200:
                    raise RuntimeError(f"HTTP {reply.status_code}: {reply.text}")

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "alerts_per_s": round(REQUESTS * ALERTS_PER_PAYLOAD / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
    }


def measure(kind: str, env: dict[str, str]) -> dict[str, float]:
    port = free_port()
    server = subprocess.Popen([sys.executable, str(HERE / "_servers.py"), kind, str(port)], env=env)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        asyncio.run(drive(port))  # warm-up pass is the same load; the second is measured
        return asyncio.run(drive(port))
    finally:
        server.terminate()
        server.wait(timeout=15)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "BENCH_STORE_URL": f"sqlite:///{tmp}/bench.db"}
        bare = measure("bare", env)
        gpubot = measure("gpubot", env)
    print(
        json.dumps(
            {
                "benchmark": "intake",
                "requests": REQUESTS,
                "alerts_per_payload": ALERTS_PER_PAYLOAD,
                "concurrency": CONCURRENCY,
                "gpubot": gpubot,
                "baseline_bare_starlette": bare,
                "ratio": round(gpubot["alerts_per_s"] / bare["alerts_per_s"], 3),
            }
        )
    )


if __name__ == "__main__":
    main()

"""Real Prometheus for tests: a DCGM-exporter-shaped endpoint the test controls, and the Debian
`prometheus` binary scraping it every second on loopback.

    with DcgmExporter() as exporter, running_prometheus(tmp_path, [exporter.target]) as prom:
        exporter.set_gpu(ExporterGpu(hostname="gpu-node-01", gpu=0, util=90.0, pod="train-0"))
        prom.wait_for_samples(3)
        ... PrometheusMetrics(url=prom.url) ...

Imported by bare name (`from real_prometheus import …`) from tests in tests/integration.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

H100 = "NVIDIA H100 80GB HBM3"
H100_MIB = 81559
DRIVER = "535.129.03"
# (metric, HELP text) in the order dcgm-exporter's default counters file lists them.
METRICS = (
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
)


def prometheus_binary() -> str:
    """The Debian package's binary; skips the test without it, fails it with CI=true."""
    path = shutil.which("prometheus", path=f"{os.environ.get('PATH', '')}:/usr/bin")
    if path is None:
        reason = "prometheus not installed (Debian package prometheus)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class ExporterGpu:
    """One GPU as dcgm-exporter reports it; pod labels only while a pod holds the GPU."""

    hostname: str
    gpu: int
    util: float = 0.0
    fb_used: float = 0.0
    temp: float = 40.0
    model: str = H100
    pod: str = ""
    namespace: str = "default"
    container: str = "main"

    @property
    def uuid(self) -> str:
        return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{self.hostname}.gpu{self.gpu}')}"

    def labels(self) -> dict[str, str]:
        labels = {
            "gpu": str(self.gpu),
            "UUID": self.uuid,
            "device": f"nvidia{self.gpu}",
            "modelName": self.model,
            "Hostname": self.hostname,
            "DCGM_FI_DRIVER_VERSION": DRIVER,
        }
        if self.pod:
            labels |= {"container": self.container, "namespace": self.namespace, "pod": self.pod}
        return labels

    def values(self) -> dict[str, float]:
        return {
            "DCGM_FI_DEV_GPU_TEMP": self.temp,
            "DCGM_FI_DEV_GPU_UTIL": self.util,
            "DCGM_FI_DEV_FB_FREE": H100_MIB - self.fb_used,
            "DCGM_FI_DEV_FB_USED": self.fb_used,
        }


def exposition(gpus: Sequence[ExporterGpu]) -> str:
    """The Prometheus text format, as dcgm-exporter writes it (HELP, TYPE, then one line per
    GPU, labels in its order)."""
    lines: list[str] = []
    for metric, help_text in METRICS:
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
        for g in gpus:
            labels = ",".join(f'{k}="{v}"' for k, v in g.labels().items())
            lines.append(f"{metric}{{{labels}}} {g.values()[metric]:g}")
    return "\n".join(lines) + "\n"


class DcgmExporter:
    """A /metrics endpoint on a free loopback port serving the GPUs the test sets."""

    def __init__(self, gpus: Sequence[ExporterGpu] = ()) -> None:
        self._lock = threading.Lock()
        self._gpus = {(g.hostname, g.gpu): g for g in gpus}
        self.scrapes = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                with exporter._lock:
                    body = exposition(list(exporter._gpus.values())).encode()
                    exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # no stderr noise per scrape

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def target(self) -> str:
        """host:port for a Prometheus static_config."""
        return f"127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return f"http://{self.target}/metrics"

    def set_gpu(self, gpu: ExporterGpu) -> None:
        """Add the GPU, or replace its series (e.g. a new utilisation) from the next scrape."""
        with self._lock:
            self._gpus[(gpu.hostname, gpu.gpu)] = gpu

    def update(self, hostname: str, gpu: int, **changes: Any) -> ExporterGpu:
        with self._lock:
            new = replace(self._gpus[(hostname, gpu)], **changes)
            self._gpus[(hostname, gpu)] = new
        return new

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> DcgmExporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class RunningPrometheus:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def instant(self, promql: str) -> list[dict[str, Any]]:
        """An instant query over plain HTTP (for waiting; tests use the adapter)."""
        response = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=5)
        response.raise_for_status()
        result: list[dict[str, Any]] = response.json()["data"]["result"]
        return result

    def wait_until(self, check: Callable[[], bool], what: str, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if check():
                    return
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; log: {self.log.read_text()[-2000:]}")

    def wait_for_samples(self, count: int, metric: str = "DCGM_FI_DEV_GPU_UTIL") -> None:
        """Until every series of `metric` has at least `count` scraped samples."""

        def enough() -> bool:
            result = self.instant(f"count_over_time({metric}[5m])")
            return bool(result) and all(float(r["value"][1]) >= count for r in result)

        self.wait_until(enough, f"{count} samples of {metric}")


@contextlib.contextmanager
def running_prometheus(
    tmp_path: Path, targets: Sequence[str], *, scrape_interval: str = "1s"
) -> Iterator[RunningPrometheus]:
    """/usr/bin/prometheus on a free loopback port scraping `targets`, storage under
    tmp_path; yields once every target is `up == 1`, and stops the process by its PID."""
    binary = prometheus_binary()
    port = free_port()
    config = {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "scrape_configs": [
            {
                "job_name": "dcgm",
                # The exporter's own pod/namespace/container labels name the workload on the
                # GPU; without honor_labels Prometheus would rename them exported_pod, … as
                # they clash with the target labels a Kubernetes service discovery adds.
                "honor_labels": True,
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = tmp_path / "prometheus.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    prom = RunningPrometheus(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        # Prometheus 2.42 waits ~5 s before its first scrape, so wait for up, not for ready.
        prom.wait_until(
            lambda: len(prom.instant('up{job="dcgm"} == 1')) == len(targets),
            "up == 1 for every target",
        )
        yield prom
    finally:
        if process.poll() is None:  # only the process this helper started, by its PID
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=15)

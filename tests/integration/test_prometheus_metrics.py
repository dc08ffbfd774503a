"""PrometheusMetrics against the real Prometheus (Debian package) scraping a DCGM-exporter-shaped
endpoint every second: the idle report's queries, result conversion, Prometheus's own errors;
and against loopback stand-ins: a dead port, a 503 retried exactly `retries` times, a slow
answer, the bearer token, and a query that leaves the event loop free."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from real_prometheus import (
    DcgmExporter,
    ExporterGpu,
    RunningPrometheus,
    free_port,
    running_prometheus,
)

from gpubot.backends.prometheus import PrometheusMetrics
from gpubot.domain.fleet.cluster import Sample
from gpubot.errors import MetricsUnavailableError, PermanentStepError, TemporaryStepError

# The idle report's queries; Q_IDLE with a 30 s lookback at 1 s steps instead of 24h:5m.
Q_UTIL = (
    "avg by (Hostname, gpu, modelName, namespace, pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))"
)
Q_MEM = "max by (Hostname, gpu, namespace, pod) (max_over_time(DCGM_FI_DEV_FB_USED[1h]))"
Q_IDLE_SHORT = (
    "sum by (Hostname, gpu, namespace, pod) (count_over_time((DCGM_FI_DEV_GPU_UTIL < 5)[30s:1s]))"
)
REPORTED = 'Hostname=~"gpu-node-0[12]"'  # gpu-node-03 is the one a test changes

BUSY = ExporterGpu(
    "gpu-node-01", 0, util=90, fb_used=70000, pod="llama-train-0", namespace="ml-train"
)
IDLE = ExporterGpu(
    "gpu-node-01", 1, util=1, fb_used=1200, pod="jupyter-alice", namespace="research"
)
IDLE2 = ExporterGpu(
    "gpu-node-02", 1, util=2, fb_used=30000, pod="vllm-sandbox-0", namespace="research"
)
FREE = ExporterGpu("gpu-node-02", 0, util=0, fb_used=0)  # no pod: the exporter omits pod labels
CHANGING = ExporterGpu("gpu-node-03", 0, util=50, fb_used=500, pod="etl-0", namespace="data")


@pytest.fixture(scope="module")
def exporter() -> Iterator[DcgmExporter]:
    with DcgmExporter([BUSY, IDLE, IDLE2, FREE, CHANGING]) as exporter:
        yield exporter


@pytest.fixture(scope="module")
def prometheus(
    exporter: DcgmExporter, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPrometheus]:
    with running_prometheus(tmp_path_factory.mktemp("prometheus"), [exporter.target]) as prom:
        prom.wait_for_samples(5)
        yield prom


def by_gpu(samples: list[Sample]) -> dict[tuple[str, str], Sample]:
    rows = {(s.labels["Hostname"], s.labels["gpu"]): s for s in samples}
    assert len(rows) == len(samples), "one row per GPU"
    return rows


def gpu_key(gpu: ExporterGpu) -> tuple[str, str]:
    return gpu.hostname, str(gpu.gpu)


def only_reported(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if s.labels["Hostname"] != CHANGING.hostname]


async def test_report_queries_per_gpu(prometheus: RunningPrometheus) -> None:
    """Q_UTIL and Q_MEM give one row per GPU with the exporter's numbers and pod labels (kept
    as `pod`/`namespace` by honor_labels); Q_IDLE counts the idle GPUs' points below 5 % and
    leaves the busy one out."""
    metrics = PrometheusMetrics(url=prometheus.url)
    util = by_gpu(only_reported(await metrics.query(promql=Q_UTIL)))
    assert {k: s.value for k, s in util.items()} == {
        gpu_key(g): g.util for g in (BUSY, IDLE, IDLE2, FREE)
    }
    assert util[gpu_key(IDLE)].labels == {
        "Hostname": "gpu-node-01",
        "gpu": "1",
        "modelName": "NVIDIA H100 80GB HBM3",
        "namespace": "research",
        "pod": "jupyter-alice",
    }
    assert util[gpu_key(FREE)].labels.keys() == {"Hostname", "gpu", "modelName"}

    mem = by_gpu(only_reported(await metrics.query(promql=Q_MEM)))
    assert {k: s.value for k, s in mem.items()} == {
        gpu_key(g): g.fb_used for g in (BUSY, IDLE, IDLE2, FREE)
    }
    assert mem[gpu_key(BUSY)].labels["pod"] == "llama-train-0"

    idle = by_gpu(only_reported(await metrics.query(promql=Q_IDLE_SHORT)))
    assert set(idle) == {gpu_key(IDLE), gpu_key(IDLE2), gpu_key(FREE)}  # BUSY is absent
    assert all(3 <= s.value <= 31 for s in idle.values())
    assert idle[gpu_key(IDLE2)].labels["namespace"] == "research"


async def test_bare_selector_keeps_exporter_labels(prometheus: RunningPrometheus) -> None:
    """A raw series carries the exporter's labels unrenamed (no exported_pod), the metric name
    and the scrape's job/instance."""
    metrics = PrometheusMetrics(url=prometheus.url)
    [sample] = await metrics.query(promql=f'DCGM_FI_DEV_FB_USED{{pod="{BUSY.pod}"}}')
    assert sample.value == BUSY.fb_used
    assert {k: sample.labels[k] for k in ("__name__", "UUID", "container", "namespace")} == {
        "__name__": "DCGM_FI_DEV_FB_USED",
        "UUID": BUSY.uuid,
        "container": "main",
        "namespace": "ml-train",
    }
    assert sample.labels["job"] == "dcgm"
    assert not any(k.startswith("exported_") for k in sample.labels)


async def test_changed_series_reach_the_next_query(
    exporter: DcgmExporter, prometheus: RunningPrometheus
) -> None:
    """The endpoint's series are the test's to change: a GPU going idle shows up in Prometheus."""
    metrics = PrometheusMetrics(url=prometheus.url)
    selector = 'DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-03"}'
    assert [s.value for s in await metrics.query(promql=selector)] == [50.0]
    exporter.update(CHANGING.hostname, CHANGING.gpu, util=0.0)
    prometheus.wait_until(
        lambda: float(prometheus.instant(selector)[0]["value"][1]) == 0.0, "the new value"
    )
    assert [s.value for s in await metrics.query(promql=f"{selector} < 5")] == [0.0]


async def test_scalars_nan_and_infinity(prometheus: RunningPrometheus) -> None:
    """A scalar is one sample without labels; NaN samples (0/0) are dropped, +Inf is kept."""
    metrics = PrometheusMetrics(url=prometheus.url)
    [total] = await metrics.query(promql='scalar(sum(DCGM_FI_DEV_FB_USED{Hostname="gpu-node-01"}))')
    assert total == Sample(labels={}, value=BUSY.fb_used + IDLE.fb_used)
    divided = await metrics.query(promql='DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-02"} / 0')
    assert [(s.labels["gpu"], s.value) for s in divided] == [("1", math.inf)]  # FREE's 0/0 gone


@pytest.mark.parametrize(
    ("promql", "says"),
    [
        ("sum(DCGM_FI_DEV_GPU_UTIL", "1:25: parse error: unclosed left parenthesis"),  # HTTP 400
        (  # HTTP 422: an execution error
            "DCGM_FI_DEV_GPU_UTIL + on(Hostname) DCGM_FI_DEV_FB_USED",
            "rejected the query: found duplicate series for the match group",
        ),
        ("DCGM_FI_DEV_GPU_UTIL[1m]", "gives a range vector"),
        ('"hello"', "does not give an instant vector of numbers"),  # a string result
    ],
)
async def test_bad_queries_are_permanent_with_prometheus_text(
    prometheus: RunningPrometheus, promql: str, says: str
) -> None:
    metrics = PrometheusMetrics(url=prometheus.url)
    with pytest.raises(PermanentStepError) as caught:
        await metrics.query(promql=promql)
    message = str(caught.value)
    assert not isinstance(caught.value, TemporaryStepError)
    assert says in message
    assert prometheus.url in message
    assert "\n" not in message
    assert len(message) < 400  # Prometheus's long series lists are cut


# Loopback stand-ins for what a real Prometheus will not do on demand.


class StandIn:
    """A tiny HTTP server answering /api/v1/query as told; records each request."""

    def __init__(self, status: int = 200, body: Any = None, hold: bool = False) -> None:
        self.status = status
        self.body = body if body is not None else {"status": "success", "data": _vector()}
        self.requests: list[dict[str, str]] = []
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.released_in_time: bool | None = None
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stand_in.requests.append(dict(self.headers))
                stand_in.arrived.set()
                if hold:  # answer only once the test releases it (or give up after 10 s)
                    stand_in.released_in_time = stand_in.release.wait(10)
                body = stand_in.body
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(stand_in.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def _vector() -> dict[str, Any]:
    return {
        "resultType": "vector",
        "result": [{"metric": {"Hostname": "n1", "gpu": "0"}, "value": [1.7e9, "42"]}],
    }


@pytest.fixture
def stand_ins() -> Iterator[list[StandIn]]:
    started: list[StandIn] = []
    yield started
    for server in started:
        server.close()


async def test_dead_prometheus_is_unavailable_naming_url_and_cause() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(MetricsUnavailableError) as caught:
        await PrometheusMetrics(url=url, retries=1).query(promql="up")
    assert str(caught.value) == (
        f"Prometheus at {url} is unavailable: cannot connect (Connection refused) after 2 attempts"
    )
    assert isinstance(caught.value, TemporaryStepError)  # the executor and report job retry


@pytest.mark.parametrize("retries", [0, 2])
async def test_503_is_retried_exactly_the_configured_times(
    stand_ins: list[StandIn], retries: int
) -> None:
    body = {"status": "error", "errorType": "unavailable", "error": "TSDB not ready"}
    server = StandIn(status=503, body=body)
    stand_ins.append(server)
    metrics = PrometheusMetrics(url=server.url, retries=retries, backoff_seconds=0)
    with pytest.raises(MetricsUnavailableError, match="HTTP 503") as caught:
        await metrics.query(promql="up")
    assert len(server.requests) == retries + 1
    assert f"after {retries + 1} attempts: TSDB not ready" in str(caught.value)


async def test_slow_answer_times_out_once_without_retry(stand_ins: list[StandIn]) -> None:
    """A Prometheus too slow to answer is not asked again at once: one request, then the
    error (the report job retries later)."""
    server = StandIn(hold=True)
    stand_ins.append(server)
    metrics = PrometheusMetrics(url=server.url, timeout_seconds=0.3, retries=2)
    with pytest.raises(MetricsUnavailableError, match=r"no answer within 0\.3s"):
        await metrics.query(promql="up")
    assert len(server.requests) == 1


async def test_query_runs_off_the_event_loop(stand_ins: list[StandIn]) -> None:
    """While a query waits for Prometheus, the loop keeps running: here it is the loop that
    lets the stand-in answer, which could never happen if the query blocked it."""
    server = StandIn(hold=True)
    stand_ins.append(server)
    query = asyncio.create_task(PrometheusMetrics(url=server.url).query(promql="up"))
    assert await asyncio.to_thread(server.arrived.wait, 10)
    server.release.set()
    samples = await query
    assert server.released_in_time is True
    assert samples == [Sample(labels={"Hostname": "n1", "gpu": "0"}, value=42.0)]


async def test_bearer_token_is_read_from_the_file_each_query(
    stand_ins: list[StandIn], tmp_path: Path
) -> None:
    server = StandIn()
    stand_ins.append(server)
    token = tmp_path / "token"
    token.write_text("first\n")
    metrics = PrometheusMetrics(url=server.url, token_file=token)
    await metrics.query(promql="up")
    token.write_text("rotated\n")
    await metrics.query(promql="up")
    assert [r["Authorization"] for r in server.requests] == ["Bearer first", "Bearer rotated"]

    server.status, server.body = 401, {"status": "error", "error": "bad token"}
    with pytest.raises(PermanentStepError, match=r"refused the credentials.*prometheus_token_file"):
        await metrics.query(promql="up")
    token.unlink()
    with pytest.raises(PermanentStepError, match=re.escape(f"token file {token}")):
        await metrics.query(promql="up")


@pytest.mark.parametrize(
    "body", [b"<html>maintenance</html>", {"hello": "world"}, {"data": {"result": None}}, [1, 2]]
)
async def test_not_a_prometheus_answer_is_unavailable(stand_ins: list[StandIn], body: Any) -> None:
    """A 200 that is not the API (a proxy's page, a wrong URL) is one line, not a KeyError."""
    server = StandIn(body=body)
    stand_ins.append(server)
    with pytest.raises(MetricsUnavailableError, match="not its API"):
        await PrometheusMetrics(url=server.url).query(promql="up")

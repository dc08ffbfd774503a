"""A real Prometheus (Debian package) scrapes a running `gpubot serve`: the exposition parses,
the state gauges show the incident, and every query of the Grafana dashboard and of the
self-monitoring rules evaluates without an error on the real engine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from real_prometheus import RunningPrometheus, free_port, running_prometheus
from waiting import answers, wait_until

REPO = Path(__file__).resolve().parents[2]
XID79 = (REPO / "tests" / "fixtures" / "alertmanager" / "xid79_firing.json").read_bytes()
DASHBOARD = REPO / "deploy" / "grafana" / "gpubot-dashboard.json"
RULES = REPO / "deploy" / "prometheus" / "gpubot-self-rules.yaml"


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[str]:
    """`gpubot serve` on a free loopback port (SQLite, simulated cluster, no Slack), JSON log
    in tmp_path; stopped by its PID."""
    port = free_port()
    config = tmp_path / "cfg.yaml"
    config.write_text(
        yaml.safe_dump({"slack": {"mode": "off"}, "store": {"url": f"sqlite:///{tmp_path}/g.db"}})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBOT_", "SLACK_"))}
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "gpubot.cli", "serve", "--config", str(config), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: answers(f"{url}/healthz"),
            "serve to answer /healthz",
            proc=process,
            output=tmp_path / "serve.log",
        )
        reply = httpx.post(f"{url}/alertmanager", content=XID79, timeout=10)
        assert reply.status_code == 200
        yield f"127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.close()


def queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    # Grafana's variables as it sends them: a rate interval, and All for cluster and job.
    exprs = [
        e.replace("$__rate_interval", "1m").replace("$cluster", ".*").replace("$job", ".*")
        for e in exprs
    ]
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return exprs + [r["expr"] for g in groups for r in g["rules"]]


def query(prom: RunningPrometheus, promql: str) -> dict[str, object]:
    reply = httpx.get(f"{prom.url}/api/v1/query", params={"query": promql}, timeout=5)
    answer: dict[str, object] = reply.json()
    return answer


def test_prometheus_scrapes_serve_and_every_query_evaluates(bot: str, tmp_path: Path) -> None:
    """The scraped incident shows as 1, this replica leads, steps were counted, and every
    dashboard and rule query answers `success` (`$__rate_interval` read as 1m, `$cluster`
    and `$job` as All)."""
    (tmp_path / "prom").mkdir()
    with running_prometheus(tmp_path / "prom", [bot]) as prom:
        prom.wait_until(lambda: bool(prom.instant("gpubot_incidents_open == 1")), "the incident")

        leader = prom.instant("gpubot_leader")
        steps = prom.instant("sum(gpubot_step_outcomes_total)")
        failures = {q: a for q in queries() if (a := query(prom, q))["status"] != "success"}

    assert [float(s["value"][1]) for s in leader] == [1.0]
    assert float(steps[0]["value"][1]) >= 1
    assert failures == {}

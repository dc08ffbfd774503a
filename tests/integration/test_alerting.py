"""The alerting side with the real tools: promtool on the rules, amtool on the receiver, and a
real Alertmanager delivering to a running gpubot over loopback."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml
from waiting import answers, wait_until

from gpubot.backends.store import open_store
from gpubot.domain.runbooks.loader import load_dirs

ROOT = Path(__file__).parents[2]
RULES = ROOT / "deploy" / "prometheus" / "gpubot-rules.yaml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "gpubot-rules.test.yaml"
RECEIVER = ROOT / "deploy" / "alertmanager" / "alertmanager-gpubot.yaml"


def tool(name: str) -> str:
    """The Debian binary (prometheus / prometheus-alertmanager packages); fails in CI if absent."""
    path = shutil.which(name)
    if path is None:
        reason = f"{name} not installed (Debian packages prometheus, prometheus-alertmanager)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_rules_pass_promtool_check() -> None:
    result = run(tool("promtool"), "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout


def test_rules_pass_their_promtool_unit_tests() -> None:
    """Each alert fires when it should and not when it should not (see the .test.yaml)."""
    result = run(tool("promtool"), "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_runbook_alert_trigger_has_a_rule() -> None:
    """The runbooks and the rules agree on alert names: no runbook waits for a silent alert."""
    rules = yaml.safe_load(RULES.read_text())
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"]}
    triggers = {
        t.alertname
        for item in load_dirs([ROOT / "runbooks"])
        for t in item.runbook.triggers
        if t.alertname
    }
    assert triggers <= set(alerts)
    assert "xid" in alerts["GPUXidError"]["labels"]  # the runbooks match on it


def test_receiver_config_passes_amtool() -> None:
    result = run(tool("amtool"), "check-config", str(RECEIVER))
    assert result.returncode == 0, result.stdout + result.stderr


def test_docs_show_the_checked_receiver() -> None:
    """The docs page on Alertmanager shows the receiver amtool checks, word for word."""
    page = (ROOT / "docs" / "configure" / "alertmanager.md").read_text()
    shown = RECEIVER.read_text()
    assert shown[shown.index("route:") :] in page


def answering(url: str) -> Callable[[], bool]:
    return lambda: answers(url)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:  # only what this test started, by PID
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()


def test_real_alertmanager_delivers_firing_and_resolved_to_gpubot(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """Alertmanager 0.25 → webhook with a bearer token → gpubot stores one incident, then
    resolves it when Alertmanager sends the resolved notification."""
    alertmanager = tool("prometheus-alertmanager")
    token = "s3cret-webhook-token"
    bot_port, am_port = _free_port(), _free_port()
    db = tmp_path / "gpubot.db"
    (tmp_path / "gpubot.yaml").write_text(
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{db}"},
                "clusters": [{"name": "sim", "backend": "simulated"}],
                "slack": {"mode": "off"},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBOT_")}
    procs.append(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpubot.cli",
                "serve",
                "--config",
                str(tmp_path / "gpubot.yaml"),
                "--port",
                str(bot_port),
            ],
            cwd=tmp_path,
            env={**env, "GPUBOT_WEBHOOK_TOKEN": token},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    )
    wait_until(answering(f"http://127.0.0.1:{bot_port}/healthz"), "gpubot", proc=procs[-1])

    # The shipped receiver, pointed at this gpubot, with fast timers for the test.
    config = yaml.safe_load(RECEIVER.read_text())
    route = config["route"]["routes"][0]
    route.update(group_wait="1s", group_interval="1s", repeat_interval="1h")
    hook = config["receivers"][1]["webhook_configs"][0]
    hook["url"] = f"http://127.0.0.1:{bot_port}/alertmanager"
    (tmp_path / "token").write_text(token)
    hook["http_config"]["authorization"]["credentials_file"] = str(tmp_path / "token")
    (tmp_path / "am.yaml").write_text(yaml.safe_dump(config))
    procs.append(
        subprocess.Popen(
            [
                alertmanager,
                f"--config.file={tmp_path / 'am.yaml'}",
                f"--storage.path={tmp_path / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{am_port}",
                "--cluster.listen-address=",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    )
    wait_until(answering(f"http://127.0.0.1:{am_port}/-/ready"), "alertmanager", proc=procs[-1])

    labels = {
        "alertname": "GPUXidError",
        "cluster": "sim",
        "Hostname": "gpu-node-09",
        "gpu": "2",
        "xid": "79",
        "severity": "critical",
    }
    now = datetime.now(UTC)
    alert = {
        "labels": labels,
        "annotations": {"summary": "GPU 2 fell off the bus"},
        "startsAt": now.isoformat(),
        "generatorURL": "http://prometheus/graph",
    }
    push = httpx.post(f"http://127.0.0.1:{am_port}/api/v2/alerts", json=[alert], timeout=5)
    assert push.status_code == 200, push.text

    store = open_store(f"sqlite:///{db}")
    try:

        def incidents() -> list[tuple[str, str]]:
            found = asyncio.run(store.list_incidents())
            return [(i.alertname, i.status.value) for i in found]

        wait_until(lambda: incidents() == [("GPUXidError", "open")], "the firing notification")
        [incident] = asyncio.run(store.list_incidents())
        assert incident.node == "gpu-node-09"
        assert incident.labels["xid"] == "79"
        [record] = asyncio.run(store.alerts_for(incident.id))
        assert re.fullmatch(r"[0-9a-f]{16}", record.fingerprint)  # Alertmanager's fingerprint

        alert["endsAt"] = (now + timedelta(seconds=1)).isoformat()
        httpx.post(f"http://127.0.0.1:{am_port}/api/v2/alerts", json=[alert], timeout=5)
        wait_until(
            lambda: incidents() == [("GPUXidError", "resolved")], "the resolved notification"
        )
    finally:
        store.dispose()

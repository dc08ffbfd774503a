"""Monitoring objects and NOTES.txt: the PrometheusRule is the shipped rules file (promtool
accepts it), the ServiceMonitor finds the Service, and NOTES shows the amtool-checked receiver."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from gpubot_chart import CHART, REPO, binary, render, render_case

RULES = REPO / "deploy" / "prometheus" / "gpubot-rules.yaml"
RECEIVER = REPO / "deploy" / "alertmanager" / "alertmanager-gpubot.yaml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def test_chart_copy_of_the_rules_is_the_deploy_file() -> None:
    """Helm reads only inside the chart, so it carries a copy: byte for byte the same file."""
    copy = CHART / "files" / "gpubot-rules.yaml"
    assert copy.read_bytes() == RULES.read_bytes()


def test_prometheus_rule_has_the_shipped_groups_and_passes_promtool(tmp_path: Path) -> None:
    """The rendered spec equals the rules file, and the real promtool checks it as rules."""
    rule = render_case("monitoring").one("PrometheusRule")
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    extracted = tmp_path / "rules.yaml"
    extracted.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    result = _run(binary("promtool"), "check", "rules", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout


def test_prometheus_rule_templates_are_left_to_prometheus() -> None:
    """Helm must not eat the rules' {{ $labels }} / {{ $value }} templates."""
    text = render_case("monitoring").text("prometheusrule.yaml")
    assert "{{ $labels.Hostname }}" in text
    assert '{{ printf "%.0f" $value }}' in text


def test_monitoring_labels_reach_the_objects() -> None:
    """Prometheus Operator picks rules and monitors by label (release=kube-prometheus-stack)."""
    labels = {"release": "kube-prometheus-stack"}
    rendered = render(
        {
            "serviceMonitor": {"enabled": True, "labels": labels},
            "prometheusRule": {"enabled": True, "labels": labels},
        }
    )
    for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule"):
        assert rendered.one(kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_service_monitor_selects_the_bot_service_and_its_metrics_port() -> None:
    rendered = render_case("monitoring")
    monitor = rendered.one("ServiceMonitor")
    service = rendered.one("Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}


def test_pod_monitor_scrapes_each_agent_pod_on_its_metrics_route() -> None:
    """The agents have no Service: a PodMonitor selects their pods and the http port."""
    rendered = render_case("monitoring")
    monitor = rendered.one("PodMonitor")
    agents = rendered.one("DaemonSet")
    pod_labels = agents["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert monitor["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "agent"
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    ports = agents["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert endpoint["port"] in {p["name"] for p in ports}
    assert (
        render({"serviceMonitor": {"enabled": True}, "agent": {"enabled": False}}).all("PodMonitor")
        == []
    )


def test_agent_rules_are_the_deploy_file_behind_self_monitoring(tmp_path: Path) -> None:
    """prometheusRule.selfMonitoring with the agent on adds the agents' rules too: the chart's
    copy is the deploy file, the spec that file, and promtool accepts it; none without agents."""
    deploy = REPO / "deploy" / "prometheus" / "gpubot-agent-rules.yaml"
    assert (CHART / "files" / "gpubot-agent-rules.yaml").read_bytes() == deploy.read_bytes()
    on = render({"prometheusRule": {"enabled": True, "selfMonitoring": True}})
    rule = on.one("PrometheusRule", name="gpubot-agent")
    assert rule["spec"] == yaml.safe_load(deploy.read_text())
    extracted = tmp_path / "agent-rules.yaml"
    extracted.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    result = _run(binary("promtool"), "check", "rules", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr
    no_agents = render(
        {"prometheusRule": {"enabled": True, "selfMonitoring": True}, "agent": {"enabled": False}}
    )
    assert {r["metadata"]["name"] for r in no_agents.all("PrometheusRule")} == {
        "gpubot",
        "gpubot-self",
    }


def _receiver_block(notes: str) -> str:
    match = re.search(
        r"^# --- gpubot receiver: begin ---\n(.*?)^# --- gpubot receiver: end ---$",
        notes,
        flags=re.S | re.M,
    )
    assert match, "NOTES.txt has no receiver block"
    return match.group(1)


def test_notes_receiver_is_the_deploy_receiver_with_the_release_url(tmp_path: Path) -> None:
    """Route and receiver as in deploy/alertmanager, pointed at this release's Service; the
    real amtool accepts the block as printed."""
    notes = render({"service": {"port": 8081}}, name="ops", namespace="monitoring-gpu").notes
    block = _receiver_block(notes)
    printed = yaml.safe_load(block)
    expected = yaml.safe_load(RECEIVER.read_text())
    expected["receivers"][1]["webhook_configs"][0]["url"] = (
        "http://ops-gpubot.monitoring-gpu.svc:8081/alertmanager"
    )
    assert printed == expected
    config = tmp_path / "alertmanager.yml"
    config.write_text(block, encoding="utf-8")
    result = _run(binary("amtool"), "check-config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr


def test_notes_tell_how_to_verify_the_install() -> None:
    notes = render_case("default").notes
    assert "kubectl -n gpubot rollout status deployment/gpubot" in notes
    assert "/readyz" in notes
    assert "/gpu status" in notes
    assert "prometheusRule.enabled=true" in notes
    assert "prometheusRule.enabled" not in render_case("monitoring").notes


def test_self_monitoring_rules_are_the_deploy_file_behind_a_value(tmp_path: Path) -> None:
    """prometheusRule.selfMonitoring adds a second PrometheusRule, the rules on gpubot itself:
    its copy in the chart is the deploy file, its spec that file, and promtool accepts it."""
    deploy = REPO / "deploy" / "prometheus" / "gpubot-self-rules.yaml"
    assert (CHART / "files" / "gpubot-self-rules.yaml").read_bytes() == deploy.read_bytes()
    off = render({"prometheusRule": {"enabled": True}})
    assert len(off.all("PrometheusRule")) == 1
    on = render({"prometheusRule": {"enabled": True, "selfMonitoring": True}})
    rule = on.one("PrometheusRule", name="gpubot-self")
    assert rule["spec"] == yaml.safe_load(deploy.read_text())
    extracted = tmp_path / "self-rules.yaml"
    extracted.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    result = _run(binary("promtool"), "check", "rules", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr

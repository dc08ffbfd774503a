"""The config and runbooks the chart renders load with gpubot's own loaders, as the pods would
load them: Settings from the ConfigMap plus the pod's environment, runbooks from their mount."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from gpubot_chart import CASES, RUNBOOK, env_of, render, render_case

from gpubot.config import Settings, load_settings
from gpubot.engine.registry import builtin_registry
from gpubot.errors import RunbookError
from gpubot.loaded_rules import build_policy, load_runbooks


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the environment each test sets, as in a fresh pod."""
    import os

    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


def _load(case: str, tmp_path: Path) -> Settings:
    path = tmp_path / "config.yaml"
    path.write_text(render_case(case).config_text, encoding="utf-8")
    return load_settings(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_config_loads_with_the_real_settings(case: str, tmp_path: Path) -> None:
    """Every case's config.yaml is accepted by gpubot.config (extra keys are errors there)."""
    s = _load(case, tmp_path)
    assert (s.web.host, s.web.port) == ("0.0.0.0", 8080)
    (cluster,) = s.clusters
    assert cluster.backend == "kubernetes"
    assert cluster.in_cluster
    assert s.slack.mode == "socket"
    # The agents are this release's DaemonSet pods: found by the cluster, never by an alert.
    assert cluster.agent is not None
    if case == "agent-host-port":  # the operator's internal_ip is kept as given
        assert (cluster.agent.address, cluster.agent.port) == ("internal_ip", 9400)
        return
    assert (cluster.agent.address, cluster.agent.port, cluster.agent.namespace) == (
        "agent_pod",
        9400,
        "gpubot",
    )
    assert cluster.agent.selector == (
        "app.kubernetes.io/name=gpubot,app.kubernetes.io/instance=gpubot,"
        "app.kubernetes.io/component=agent"
    )


def test_sqlite_store_is_an_absolute_path_on_the_volume(tmp_path: Path) -> None:
    s = _load("default", tmp_path)
    assert s.store.url == "sqlite:////var/lib/gpubot/gpubot.db"
    assert s.leader_election.enabled is False


def test_ha_pod_environment_completes_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HA: the Secret's URL (GPUBOT_STORE__URL) and the pod name become store and identity."""
    rendered = render_case("ha-postgres-url")
    env = env_of(rendered.bot_container)
    assert "GPUBOT_STORE__URL" in env
    assert "GPUBOT_LEADER_ELECTION__IDENTITY" in env
    url = CASES["ha-postgres-url"]["postgresql"]["url"]
    monkeypatch.setenv("GPUBOT_STORE__URL", url)
    monkeypatch.setenv("GPUBOT_LEADER_ELECTION__IDENTITY", "gpubot-7d9c-abcde")
    monkeypatch.setenv("GPUBOT_WEBHOOK_TOKEN", "wh")
    s = _load("ha-postgres-url", tmp_path)
    assert s.store.url == url
    le = s.leader_election
    assert (le.enabled, le.namespace, le.lease_name) == (True, "gpubot", "gpubot-leader")
    assert le.identity == "gpubot-7d9c-abcde"
    assert s.webhook_token is not None
    assert s.webhook_token.get_secret_value() == "wh"


def test_operator_config_is_merged_not_replaced(tmp_path: Path) -> None:
    """config.* values reach gpubot; the chart adds only its own keys."""
    values: dict[str, Any] = {
        "config": {
            "slack": {"channel": "#gpu-pager"},
            "policy": {"groups": {"oncall": {"users": ["U012ABCDEF"]}}},
            "leader_election": {"lease_seconds": 30},
            "clusters": [
                {
                    "name": "prod-a",
                    "backend": "kubernetes",
                    "in_cluster": True,
                    "agent": {"address": "internal_ip", "port": 9401},
                    "prometheus_url": "http://prometheus-operated.monitoring.svc:9090",
                }
            ],
        }
    }
    path = tmp_path / "config.yaml"
    rendered = render(values)
    path.write_text(rendered.config_text, encoding="utf-8")
    s = load_settings(path)
    assert s.slack.channel == "#gpu-pager"
    assert s.slack.mode == "socket"  # the chart's default survives a partial override
    assert s.policy.groups["oncall"].users == ["U012ABCDEF"]
    assert s.leader_election.lease_seconds == 30
    assert s.clusters[0].prometheus_url == "http://prometheus-operated.monitoring.svc:9090"
    agent = s.clusters[0].agent
    assert agent is not None
    assert (agent.address, agent.port) == ("internal_ip", 9401)  # the operator's choice kept
    agent_env = env_of(rendered.one("DaemonSet")["spec"]["template"]["spec"]["containers"][0])
    assert agent_env["GPUBOT_AGENT__CLUSTER"]["value"] == "prod-a"


def test_agent_environment_loads_without_a_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DaemonSet configures `gpubot agent` through the environment alone, as the kubelet
    sets it: the downward API's node address, and `$(VAR)` expanded from earlier entries."""
    (container,) = render_case("default").one("DaemonSet")["spec"]["template"]["spec"]["containers"]
    kubelet = {"status.hostIP": "10.0.7.12"}
    seen: dict[str, str] = {}
    for name, entry in env_of(container).items():
        if "value" in entry:
            seen[name] = re.sub(r"\$\((\w+)\)", lambda m: seen.get(m[1], m[0]), entry["value"])
        elif (field := entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")) in kubelet:
            seen[name] = kubelet[field]
        else:
            continue
        monkeypatch.setenv(name, seen[name])
    s = load_settings(None)
    assert s.agent.dcgm_host == "10.0.7.12:5555"  # the GPU Operator's host engine, by default
    assert s.agent.bot_url == "http://gpubot.gpubot.svc:8080"
    assert s.agent.cluster == "default"
    # ServiceAccount identity: the token files are the pod's projected volumes, the one
    # caller is the bot's account; no per-node token, never the bot's master.
    rendered = render_case("default")
    pod = rendered.one("DaemonSet")["spec"]["template"]["spec"]
    mounts = {m["name"]: Path(m["mountPath"]) for m in container["volumeMounts"]}
    assert s.agent.identity == "serviceaccount"
    assert s.agent.identity_token_file == mounts["identity"] / "token"
    assert s.agent.api_token_file == mounts["kube-api"] / "token"
    assert s.agent.api_ca_file == mounts["kube-api"] / "ca.crt"
    bot_sa = rendered.bot["spec"]["template"]["spec"]["serviceAccountName"]
    assert s.agent.bot_service_account == f"system:serviceaccount:gpubot:{bot_sa}"
    volumes = {v["name"]: v for v in pod["volumes"]}
    [own] = volumes["identity"]["projected"]["sources"]
    assert own["serviceAccountToken"]["audience"] == s.agent.audience == "gpubot"
    assert s.agent_node_tokens() == (None, None)
    assert "hostPath" not in str(volumes)
    assert "GPUBOT_AGENT_TOKEN" not in env_of(container)
    assert s.agent_token_value() is None
    listen = container["args"][container["args"].index("--listen") + 1]
    assert listen == "0.0.0.0:9400"


def test_the_old_agent_url_fails_the_render_saying_what_to_set() -> None:
    values = {"config": {"clusters": [{"name": "a", "agent_url": "http://{node}:9400"}]}}
    with pytest.raises(
        Exception, match=r"agent_url is no longer read.*agent: \{address: agent_pod"
    ):
        render(values)


def _mount_runbooks(values: dict[str, Any], tmp_path: Path) -> tuple[Settings, Path]:
    """Write the runbooks ConfigMap as the kubelet would mount it; the config points there."""
    rendered = render(values)
    config = tmp_path / "config.yaml"
    config.write_text(rendered.config_text, encoding="utf-8")
    s = load_settings(config)
    assert [str(d) for d in s.runbooks.dirs] == ["/etc/gpubot/runbooks"]
    mount = tmp_path / "runbooks"
    mount.mkdir()
    for name, text in rendered.one("ConfigMap", "gpubot-runbooks")["data"].items():
        (mount / name).write_text(text, encoding="utf-8")
    return s.model_copy(update={"runbooks": s.runbooks.model_copy(update={"dirs": [mount]})}), mount


def test_custom_runbook_from_values_validates_with_the_real_loader(tmp_path: Path) -> None:
    """runbooks.extra → ConfigMap → mounted file → loaded and validated next to the shipped ones."""
    s, mount = _mount_runbooks(CASES["custom-runbooks"], tmp_path)
    assert (mount / "gpu-health-check.yaml").read_text() == RUNBOOK
    loaded = load_runbooks(s, registry=builtin_registry(), policy=build_policy(s))
    names = {item.runbook.name for item in loaded}
    assert "gpu-health-check" in names
    assert "xid79" in names  # runbooks.builtin stays on


def test_bad_custom_runbook_is_reported_with_file_and_line(tmp_path: Path) -> None:
    """A runbook that breaks the safety rules renders, but the bot refuses it at start with
    `file:line: field: reason` (what `kubectl logs` shows)."""
    unsafe = RUNBOOK.replace("action: notify", "action: node.drain").replace(
        'message: "{{ params.node }}: healthy={{ steps.check.output.healthy }}"',
        'node: "{{ params.node }}"',
    )
    s, _ = _mount_runbooks({"runbooks": {"extra": {"drain-now.yaml": unsafe}}}, tmp_path)
    with pytest.raises(RunbookError) as caught:
        load_runbooks(s, registry=builtin_registry(), policy=build_policy(s))
    message = str(caught.value)
    assert "drain-now.yaml:" in message
    assert "steps[1].approval" in message

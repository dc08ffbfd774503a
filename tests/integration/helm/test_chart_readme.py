"""The docs' Kubernetes install page installs what it says: its values files render, validate and
load, and its Secrets carry the names and keys the chart reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from gpubot_chart import REPO, Rendered, env_of, render

from gpubot.config import load_settings


def _section() -> str:
    return (REPO / "docs" / "install" / "kubernetes.md").read_text()


def _values_file(name: str) -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(# " + re.escape(name) + r"\n.*?)```", _section(), re.S)
    assert len(blocks) == 1, f"the install page shows {name} {len(blocks)} times"
    return dict(yaml.safe_load(blocks[0]))


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`helm -f a.yaml -f b.yaml`: maps merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _secret_commands() -> dict[str, set[str]]:
    """Secret name → keys, from the install page's `kubectl create secret generic` commands."""
    found: dict[str, set[str]] = {}
    for command in re.findall(r"create secret generic (.*?)(?:\n\n|```)", _section(), re.S):
        name = command.split()[0]
        found[name] = set(re.findall(r"--from-literal=([A-Za-z_]+)=", command))
    return found


def _check(rendered: Rendered, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    version = kubernetes_validate.latest_version()
    for obj in rendered.objects:
        kubernetes_validate.validate(obj, version, strict=True)
    path = tmp_path / "config.yaml"
    path.write_text(rendered.config_text, encoding="utf-8")
    monkeypatch.setenv("GPUBOT_STORE__URL", "postgresql+psycopg://gpubot:pw@pg/gpubot")
    return load_settings(path)


def test_minimal_install_renders_validates_and_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = render(_values_file("values-minimal.yaml"))
    s = _check(rendered, tmp_path, monkeypatch)
    assert rendered.bot["spec"]["replicas"] == 1
    assert s.clusters[0].name == "prod-a"
    assert s.policy.groups["oncall"].usergroups == ["S0123ONCALL"]
    assert rendered.bot_container["image"] == "REGISTRY/gpubot:0.1.0"


def test_ha_install_renders_validates_and_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = _merge(_values_file("values-minimal.yaml"), _values_file("values-ha.yaml"))
    rendered = render(values)
    s = _check(rendered, tmp_path, monkeypatch)
    assert rendered.bot["spec"]["replicas"] == 2
    assert s.leader_election.enabled
    assert s.store.url.startswith("postgresql+psycopg://")


def test_readme_secrets_are_the_ones_the_chart_reads() -> None:
    """The kubectl commands create the Secrets and keys the rendered pods reference."""
    secrets = _secret_commands()
    values = _merge(_values_file("values-minimal.yaml"), _values_file("values-ha.yaml"))
    rendered = render(values)
    refs = {
        (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for e in env_of(rendered.bot_container).values()
        if "secretKeyRef" in e.get("valueFrom", {})
    }
    for name, keys in secrets.items():
        if name == "gpubot-webhook":  # Alertmanager's copy, in its own namespace
            assert keys == {"token"}
            continue
        for key in keys:
            assert (name, key) in refs, (
                f"the install page creates {name}/{key}; the chart never reads it"
            )
    assert ("gpubot-postgres", "url") in refs
    assert {"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "GPUBOT_WEBHOOK_TOKEN"} <= (
        secrets["gpubot-tokens"]
    )
    # The chart's agents use ServiceAccount tokens: no agent master secret to create.
    assert "GPUBOT_AGENT_TOKEN" not in secrets["gpubot-tokens"]

"""Which mode each cluster's agents use, as config and wiring build it: serviceaccount on
Kubernetes (reviewed by that cluster's API server), hmac elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpubot.config import load_settings
from gpubot.errors import ConfigError
from gpubot.wiring import agent_event_auth, build_clusters


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "lab",
                "clusters": [{"name": "lab", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "u"}}],
            }
        )
    )
    return path


def _settings(tmp_path: Path, **agent: Any) -> Any:
    token = tmp_path / "bot-token"
    token.write_text("eyJ.x.y\n")
    prod = {
        "name": "prod",
        "backend": "kubernetes",
        "kubeconfig": str(_kubeconfig(tmp_path)),
        "agent": {
            "address": "agent_pod",
            "identity": "serviceaccount",
            "identity_token_file": str(token),
            **agent,
        },
    }
    sim = {"name": "sim", "backend": "simulated", "agent": {"port": 9400}}
    return load_settings(None, clusters=[sim, prod])


def test_each_cluster_gets_its_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUBOT_AGENT_TOKEN", "master")
    s = _settings(tmp_path, audience="gpubot.example", service_account="agents")
    auth = agent_event_auth(s)
    assert auth.hmac_clusters == frozenset({"sim"})
    assert auth.master == "master"
    [agents] = auth.service_accounts
    assert (agents.cluster, agents.audience, agents.service_account, agents.namespace) == (
        "prod",
        "gpubot.example",
        "agents",
        "gpubot",
    )
    assert set(build_clusters(s)) == {"sim", "prod"}


def test_serviceaccount_needs_a_kubernetes_cluster() -> None:
    with pytest.raises(ConfigError, match="serviceaccount needs backend: kubernetes"):
        load_settings(
            None,
            clusters=[{"name": "sim", "agent": {"identity": "serviceaccount"}}],
        )


def test_the_bot_starts_only_with_its_projected_token(tmp_path: Path) -> None:
    """bot_audience: shared sends the projected token: it must be there. (per_node, the
    default, requests a token per node from the API server instead.)"""
    s = _settings(tmp_path, identity_token_file=str(tmp_path / "absent"))
    build_clusters(s)
    s = _settings(tmp_path, bot_audience="shared", identity_token_file=str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match=r"identity_token_file: .* is not a file"):
        build_clusters(s)

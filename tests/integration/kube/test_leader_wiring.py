"""`leader_election` in the config: build_app takes a Lease through the kubeconfig context,
serve starts it as a companion, and the replica leads only while it holds the Lease."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kube_standin import KubeStandin

from gpubot.config import load_settings
from gpubot.errors import ConfigError
from gpubot.wiring import build_app


def _kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "other",
                "clusters": [{"name": "lab", "cluster": {"server": url}}],
                "users": [{"name": "bot", "user": {"token": "t0ken"}}],
                "contexts": [
                    {"name": "lab", "context": {"cluster": "lab", "user": "bot"}},
                    {"name": "other", "context": {"cluster": "nowhere", "user": "bot"}},
                ],
            }
        )
    )
    return path


async def test_enabled_leader_election_takes_the_lease(
    standin: KubeStandin, tmp_path: Path
) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", standin.url)
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/g.db"},
        clusters=[{"name": "sim", "backend": "simulated"}],
        slack={"mode": "off"},
        leader_election={"enabled": True, "cluster": "sim", "identity": "replica-a"},
    )
    with pytest.raises(ConfigError, match="needs a kubernetes cluster"):
        build_app(settings)

    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/g.db"},
        clusters=[
            {
                "name": "lab",
                "backend": "kubernetes",
                "context": "lab",
                "kubeconfig": str(kubeconfig),
                "agent": {"port": 9400},
            }
        ],
        slack={"mode": "off"},
        leader_election={"enabled": True, "identity": "replica-a", "namespace": "gpubot"},
    )
    app = build_app(settings)
    try:
        assert app.lease in app.companions()
        assert not app.service.e.leadership.is_leader()
        await app.lease.start()  # what `serve` does first
        assert app.service.e.leadership.is_leader()
        calls = [c for c in standin.calls if "/leases" in str(c)]
        assert calls, "the Lease was taken through the kubeconfig context's server"
        await app.lease.stop()
        assert not app.service.e.leadership.is_leader()
    finally:
        await app.aclose()

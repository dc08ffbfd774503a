"""`leader_election` in the config: build_app takes a Lease through the kubeconfig context,
serve starts it as a companion, and the replica leads only while it holds the Lease."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kube_cluster import Cluster

from gpubot.config import load_settings
from gpubot.errors import ConfigError
from gpubot.wiring import build_app


async def test_enabled_leader_election_takes_the_lease(cluster: Cluster, tmp_path: Path) -> None:
    kubeconfig = cluster.plane.kubeconfig_for(tmp_path / "kubeconfig", token=cluster.plane.token)
    # The current context goes nowhere: the Lease must be taken through the configured one.
    doc = yaml.safe_load(kubeconfig.read_text())
    doc["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:9"}})
    doc["contexts"].append({"name": "other", "context": {"cluster": "nowhere", "user": "user"}})
    doc["current-context"] = "other"
    kubeconfig.write_text(yaml.safe_dump(doc))
    ns = cluster.namespace("gpubot")
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
        leader_election={"enabled": True, "identity": "replica-a", "namespace": ns},
    )
    app = build_app(settings)
    try:
        assert app.lease in app.companions()
        assert not app.service.e.leadership.is_leader()
        await app.lease.start()  # what `serve` does first
        assert app.service.e.leadership.is_leader()
        lease = cluster.coordination.read_namespaced_lease("gpubot-leader", ns)
        assert lease.spec.holder_identity == "replica-a"
        await app.lease.stop()
        assert not app.service.e.leadership.is_leader()
    finally:
        await app.aclose()

"""`leader_election` in the config: build_app takes a Lease through the kubeconfig context,
serve starts it as a companion, and the replica leads only while it holds the Lease."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from control_plane import REPO
from kube_cluster import Cluster
from prometheus_client import generate_latest

if str(REPO / "tests" / "reliability") not in sys.path:
    sys.path.insert(0, str(REPO / "tests" / "reliability"))

from reliability_procs import pg_schema

from gpubot.backends.kube.shards import ShardedLeadership
from gpubot.backends.store.shared_caps import SqlSharedCaps
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


@pytest.mark.postgres
async def test_shards_in_the_config_make_a_sharded_replica_on_postgresql(
    cluster: Cluster, tmp_path: Path
) -> None:
    """leader_election.shards: the replica leads the shards it takes, counts the caps in the
    store it shares, reports its shards on /metrics; on SQLite the config is refused."""
    kubeconfig = cluster.plane.kubeconfig_for(tmp_path / "kubeconfig", token=cluster.plane.token)
    ns = cluster.namespace("gpubot")
    lab = {
        "name": "lab",
        "backend": "kubernetes",
        "context": "lab",
        "kubeconfig": str(kubeconfig),
        "agent": {"port": 9400},
    }
    sharded = {"enabled": True, "identity": "replica-a", "namespace": ns, "shards": 4}
    on_sqlite = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/g.db"},
        clusters=[lab],
        slack={"mode": "off"},
        leader_election=sharded,
    )
    with pytest.raises(ConfigError, match="shards: 4 needs a PostgreSQL store"):
        build_app(on_sqlite)

    schema = pg_schema()
    settings = load_settings(
        None,
        store={"url": schema.url},
        clusters=[lab],
        slack={"mode": "off"},
        leader_election=sharded,
    )
    app = build_app(settings)
    try:
        assert isinstance(app.lease, ShardedLeadership)
        assert isinstance(app.service.e.shared_caps, SqlSharedCaps)
        assert app.service.e.identity == "replica-a"
        await app.lease.start()
        assert sorted(app.lease.held()) == [0, 1, 2, 3]  # alone: every shard
        assert app.service.e.leadership.leads("lab/gpu-node-01")
        scraped = generate_latest(app.metrics.registry).decode()
        assert "gpubot_shards_held 4.0" in scraped
        await app.lease.stop()
        assert not app.service.e.leadership.leads("lab/gpu-node-01")
    finally:
        await app.aclose()
        for ports in app.clusters.values():
            ports.kube.close()  # type: ignore[attr-defined]
        schema.drop()

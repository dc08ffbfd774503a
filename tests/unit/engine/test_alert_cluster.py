"""Which cluster an alert acts on: its `cluster` label, else the default or the only cluster;
an alert for no configured cluster is logged, counted, audited and said in the channel."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.config import load_settings
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.engine.service import GpubotService
from gpubot.errors import ConfigError
from gpubot.web.metrics import WebMetrics

MakeHarness = Any  # the `harness` fixture in tests/unit/conftest.py
FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"
XID79 = (Path(__file__).parents[3] / "runbooks" / "xid79.yaml").read_text()


def unlabelled_xid79() -> AlertmanagerPayload:
    """The captured XID 79 webhook as kube-prometheus-stack and the shipped rules send it:
    no `cluster` label on the alert, in the group or in the common labels."""
    body = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
    for labels in (body["groupLabels"], body["commonLabels"], body["alerts"][0]["labels"]):
        labels.pop("cluster")
    return AlertmanagerPayload.model_validate(body)


def renamed(h: Any, *names: str, default: str | None = None) -> GpubotService:
    """The harness's service with its one simulated cluster configured under `names`."""
    ports = h.service.e.clusters["sim"]
    clusters = {name: ports for name in names}
    return GpubotService(replace(h.service.e, clusters=clusters, default_cluster=default))


async def deliver(service: GpubotService, payload: AlertmanagerPayload) -> None:
    await service.process(await service.ingest(payload))
    await service.wait_idle()


async def test_an_unlabelled_alert_acts_on_the_only_cluster(harness: MakeHarness) -> None:
    """The chart's one cluster is called `default`: the first real alert quarantines its node."""
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    service = renamed(h, "default")
    await deliver(service, unlabelled_xid79())
    [run] = await h.store.list_runs()
    assert run.cluster == "default"
    assert (await h.step_status(run.id))["cordon"] == "succeeded"
    assert (await h.cluster.kube.get_node(node="gpu-node-07")).unschedulable


async def test_an_unlabelled_alert_acts_on_the_default_of_several(harness: MakeHarness) -> None:
    h = harness(XID79)
    inject_xid(h.cluster, node="gpu-node-07", gpu=3)
    service = renamed(h, "east", "west", default="west")
    await deliver(service, unlabelled_xid79())
    [run] = await h.store.list_runs()
    assert run.cluster == "west"


async def test_an_alert_for_no_configured_cluster_is_said_counted_and_audited(
    harness: MakeHarness, caplog: pytest.LogCaptureFixture
) -> None:
    """Several clusters and no default: the unlabelled alert starts nothing, and nothing about
    it is silent: one warning line, a counter, an audit event and a message in the thread."""
    h = harness(XID79)
    metrics = WebMetrics()
    service = GpubotService(
        replace(renamed(h, "east", "west").e, tally=metrics),
    )
    with caplog.at_level(logging.WARNING, logger="gpubot"):
        await deliver(service, unlabelled_xid79())
    assert await h.store.list_runs() == []
    assert not (await h.cluster.kube.get_node(node="gpu-node-07")).unschedulable
    [line] = [r for r in caplog.records if getattr(r, "event", "") == "alert.unknown_cluster"]
    assert "configured: east, west" in line.getMessage()
    assert metrics.registry.get_sample_value("gpubot_alerts_unknown_cluster_total") == 1
    kinds = [e.kind for e in await h.store.events()]
    assert kinds == ["incident.opened", "alert.unknown_cluster"]
    assert "No action taken: unknown cluster" in h.notifier.text()
    assert "default_cluster" in h.notifier.text()


async def test_a_labelled_alert_for_an_unknown_cluster_names_it(harness: MakeHarness) -> None:
    h = harness(XID79)
    body = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
    body["alerts"][0]["labels"]["cluster"] = "gpu-prod-9"
    await deliver(renamed(h, "default"), AlertmanagerPayload.model_validate(body))
    assert await h.store.list_runs() == []
    [event] = [e for e in await h.store.events() if e.kind == "alert.unknown_cluster"]
    assert event.args == {"cluster": "gpu-prod-9"}
    assert "configured: default" in h.notifier.text()


def test_default_cluster_must_be_a_configured_one(tmp_path: Path) -> None:
    config = tmp_path / "gpubot.yaml"
    config.write_text("clusters: [{name: east}, {name: west}]\ndefault_cluster: north\n")
    with pytest.raises(ConfigError, match="default_cluster: 'north' is not a configured cluster"):
        load_settings(config)
    config.write_text("clusters: [{name: east}, {name: east}]\n")
    with pytest.raises(ConfigError, match="'east' is configured twice"):
        load_settings(config)


def test_settings_say_where_an_unlabelled_alert_goes(tmp_path: Path) -> None:
    config = tmp_path / "gpubot.yaml"
    config.write_text("clusters: [{name: default}]\n")
    assert load_settings(config).fallback_cluster == "default"
    config.write_text("clusters: [{name: east}, {name: west}]\n")
    assert load_settings(config).fallback_cluster is None
    config.write_text("clusters: [{name: east}, {name: west}]\ndefault_cluster: west\n")
    assert load_settings(config).fallback_cluster == "west"

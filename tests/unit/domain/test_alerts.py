"""Alertmanager webhook parsing at the edge, and the per-alert observations built from it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.incidents.correlation import observations

FIXTURES = Path(__file__).parents[2] / "fixtures" / "alertmanager"
ALL_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.json"))
FIRING = [
    "alertmanager_firing.json",
    "grouped_two_alerts.json",
    "pod_oomkilled_firing.json",
    "xid79_firing.json",
]
RESOLVED = ["alertmanager_resolved.json", "xid79_resolved.json"]


def load(name: str) -> AlertmanagerPayload:
    return AlertmanagerPayload.model_validate_json((FIXTURES / name).read_bytes())


def raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_bytes())
    return data


def test_every_fixture_is_covered() -> None:
    """The firing/resolved lists below name every fixture file, so none goes untested."""
    assert sorted(FIRING + RESOLVED) == ALL_FIXTURES


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fixture_parses_with_the_fields_alertmanager_sent(name: str) -> None:
    """Each captured body parses, and the parsed values equal what is in the JSON."""
    body = raw(name)
    payload = load(name)
    assert payload.version == "4"
    assert payload.status == body["status"]
    assert payload.receiver == body["receiver"]
    assert payload.group_key == body["groupKey"]
    assert payload.group_labels == body["groupLabels"]
    assert payload.common_labels == body["commonLabels"]
    assert payload.common_annotations == body["commonAnnotations"]
    assert payload.external_url == body["externalURL"]
    assert payload.truncated_alerts == body["truncatedAlerts"] == 0
    assert len(payload.alerts) == len(body["alerts"])
    for alert, sent in zip(payload.alerts, body["alerts"], strict=True):
        assert alert.fingerprint == sent["fingerprint"]
        assert alert.labels == sent["labels"]
        assert alert.annotations == sent["annotations"]
        assert alert.generator_url == sent["generatorURL"]
        assert alert.alertname == sent["labels"]["alertname"]
        assert alert.starts_at.tzinfo is not None


def test_aliases_are_read_from_the_camel_case_keys() -> None:
    """groupKey, truncatedAlerts and generatorURL land on their snake_case fields."""
    payload = load("alertmanager_firing.json")
    assert payload.group_key == '{}:{alertname="GPUHighTemperature", cluster="gpu-prod-1"}'
    assert payload.alerts[0].generator_url == (
        "http://127.0.0.1:19090/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+85"
    )
    body = raw("alertmanager_firing.json") | {"truncatedAlerts": 7}
    assert AlertmanagerPayload.model_validate(body).truncated_alerts == 7


@pytest.mark.parametrize("name", FIRING)
def test_firing_go_zero_end_time_becomes_none(name: str) -> None:
    """Alertmanager's `0001-01-01T00:00:00Z` on a firing alert means "no end yet": None."""
    payload = load(name)
    assert payload.status == "firing"
    for alert, sent in zip(payload.alerts, raw(name)["alerts"], strict=True):
        assert sent["endsAt"] == "0001-01-01T00:00:00Z"
        assert alert.status == "firing"
        assert alert.ends_at is None


def test_resolved_end_time_is_kept_exactly() -> None:
    """A resolved alert keeps its real endsAt, microseconds and UTC included."""
    alert = load("alertmanager_resolved.json").alerts[0]
    assert alert.status == "resolved"
    assert alert.starts_at == datetime(2026, 11, 22, 1, 39, 20, 294642, tzinfo=UTC)
    assert alert.ends_at == datetime(2026, 11, 22, 1, 40, 26, 389891, tzinfo=UTC)


def test_xid79_resolved_end_time_is_kept() -> None:
    """The built XID 79 resolve keeps its endsAt, 35 minutes after startsAt."""
    alert = load("xid79_resolved.json").alerts[0]
    assert alert.ends_at is not None
    assert (alert.ends_at - alert.starts_at).total_seconds() == 35 * 60


def test_a_firing_and_its_resolve_share_the_fingerprint() -> None:
    """The resolve of an alert carries the same fingerprint as the firing it ends."""
    assert load("alertmanager_firing.json").alerts[0].fingerprint == "9c94cb2fda6e3cd9"
    assert load("alertmanager_resolved.json").alerts[0].fingerprint == "9c94cb2fda6e3cd9"
    assert load("xid79_firing.json").alerts[0].fingerprint == (
        load("xid79_resolved.json").alerts[0].fingerprint
    )


def test_naive_start_time_is_made_utc() -> None:
    """A startsAt without an offset is read as UTC, so it compares with aware datetimes."""
    body = raw("alertmanager_firing.json")
    body["alerts"][0]["startsAt"] = "2026-11-22T01:39:20"
    alert = AlertmanagerPayload.model_validate(body).alerts[0]
    assert alert.starts_at == datetime(2026, 11, 22, 1, 39, 20, tzinfo=UTC)


def test_observation_correlation_key_uses_the_hostname_label() -> None:
    """The key is cluster/alertname/node, the node read from the DCGM `Hostname` label."""
    (obs,) = observations(load("alertmanager_firing.json"), default_cluster="sim")
    assert obs.node == "gpu-node-07"
    assert obs.cluster == "gpu-prod-1"
    assert obs.correlation_key == "gpu-prod-1/GPUHighTemperature/gpu-node-07"
    assert obs.severity == "warning"
    assert obs.summary == "GPU 3 on gpu-node-07 is at 91C"
    assert obs.group_key == load("alertmanager_firing.json").group_key
    assert obs.ends_at is None


def test_xid79_observation() -> None:
    """The XID 79 fixture correlates on cluster `sim`, node gpu-node-07, severity critical."""
    (obs,) = observations(load("xid79_firing.json"), default_cluster="sim")
    assert obs.correlation_key == "sim/GPUXidError/gpu-node-07"
    assert obs.severity == "critical"
    assert obs.labels["xid"] == "79"


def test_grouped_alerts_share_one_correlation_key_but_not_a_fingerprint() -> None:
    """Two GPUs on one node, same alertname: one incident key, two distinct alerts."""
    first, second = observations(load("grouped_two_alerts.json"), default_cluster="sim")
    assert first.correlation_key == second.correlation_key
    assert first.correlation_key == "gpu-test/GPUHighTemperature/gpu-node-07"
    assert first.fingerprint != second.fingerprint
    assert {first.fingerprint, second.fingerprint} == {"bc5955712529faba", "3434940d41be99a8"}
    assert (first.labels["gpu"], second.labels["gpu"]) == ("0", "1")


def test_workload_alerts_key_on_the_pod_even_on_one_node() -> None:
    """Two idle pods on one node are two incidents (two reclamations), while an XID alert
    that carries the GPU's pod stays per node; a rule's `gpubot_scope` label decides."""
    body = raw("alertmanager_firing.json")
    base = body["alerts"][0]

    def key(**labels: str) -> str:
        alert = dict(base, labels={"cluster": "c", "Hostname": "gpu-node-12", **labels})
        (obs,) = observations(
            AlertmanagerPayload.model_validate(dict(body, alerts=[alert])), default_cluster="sim"
        )
        return obs.correlation_key

    idle = {"alertname": "GPUIdleAllocated", "namespace": "research"}
    assert key(**idle, pod="jupyter-alice") == "c/GPUIdleAllocated/research/jupyter-alice"
    assert key(**idle, pod="vllm-0") == "c/GPUIdleAllocated/research/vllm-0"
    xid = {"alertname": "GPUXidError", "namespace": "ml", "pod": "train-0"}
    assert key(**xid) == "c/GPUXidError/gpu-node-12"
    assert key(**xid, gpubot_scope="pod") == "c/GPUXidError/ml/train-0"
    assert (
        key(alertname="GPUIdleAllocated", gpubot_scope="node") == "c/GPUIdleAllocated/gpu-node-12"
    )
    assert key(alertname="GPUIdleAllocated") == "c/GPUIdleAllocated/gpu-node-12"  # no pod label


def test_observation_without_node_or_cluster_labels_uses_defaults() -> None:
    """No node label gives `-` in the key; no cluster label gives the default `sim`."""
    body = raw("alertmanager_firing.json")
    body["alerts"][0]["labels"] = {"alertname": "Watchdog"}
    body["alerts"][0]["annotations"] = {}
    (obs,) = observations(AlertmanagerPayload.model_validate(body), default_cluster="sim")
    assert obs.node is None
    assert obs.correlation_key == "sim/Watchdog/-"
    assert obs.summary == "Watchdog"
    assert obs.severity == "warning"


def _broken(name: str, change: str) -> bytes:
    body = raw("alertmanager_firing.json")
    if change == "missing version":
        del body["version"]
    elif change == "version 3":
        body["version"] = "3"
    elif change == "alerts empty":
        body["alerts"] = []
    elif change == "status weird":
        body["status"] = "weird"
    elif change == "alert status weird":
        body["alerts"][0]["status"] = "weird"
    elif change == "fingerprint empty":
        body["alerts"][0]["fingerprint"] = ""
    elif change == "missing groupKey":
        del body["groupKey"]
    elif change == "negative truncatedAlerts":
        body["truncatedAlerts"] = -1
    elif change == "label value not a string":
        body["alerts"][0]["labels"]["gpu"] = 3
    elif change == "bad startsAt":
        body["alerts"][0]["startsAt"] = "yesterday"
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("missing version", "version"),
        ("version 3", "version"),
        ("alerts empty", "alerts"),
        ("status weird", "status"),
        ("alert status weird", "alerts.0.status"),
        ("fingerprint empty", "alerts.0.fingerprint"),
        ("missing groupKey", "groupKey"),
        ("negative truncatedAlerts", "truncatedAlerts"),
        ("label value not a string", "alerts.0.labels.gpu"),
        ("bad startsAt", "alerts.0.startsAt"),
    ],
)
def test_malformed_body_raises_validation_error_on_the_field(change: str, field: str) -> None:
    """Each malformed variant of a real capture is refused, and the error names the field."""
    with pytest.raises(ValidationError) as caught:
        AlertmanagerPayload.model_validate_json(_broken("alertmanager_firing.json", change))
    locs = {".".join(str(p) for p in e["loc"]) for e in caught.value.errors()}
    assert field in locs


@pytest.mark.parametrize("body", [b"", b"not json", b"{", b"[]", b"null", b'"4"'])
def test_non_json_or_non_object_body_raises_validation_error(body: bytes) -> None:
    """Garbage, truncated JSON and JSON that is not an object are ValidationErrors too."""
    with pytest.raises(ValidationError):
        AlertmanagerPayload.model_validate_json(body)


def test_parsed_payload_is_frozen() -> None:
    """Parsed payloads cannot be changed after the edge."""
    payload = load("alertmanager_firing.json")
    with pytest.raises(ValidationError):
        payload.status = "resolved"  # type: ignore[misc]


json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
timestamps = st.sampled_from(
    ["0001-01-01T00:00:00Z", "2026-11-22T01:39:20.294642Z", "2026-11-22T01:39:20+05:00", "x"]
) | st.text(max_size=30)
alert_dicts = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["firing", "resolved", "weird"]) | json_value,
        "labels": st.dictionaries(st.text(max_size=8), st.text(max_size=8)) | json_value,
        "annotations": st.dictionaries(st.text(max_size=8), st.text(max_size=8)) | json_value,
        "startsAt": timestamps | json_value,
        "endsAt": timestamps | json_value,
        "generatorURL": st.text(max_size=20) | json_value,
        "fingerprint": st.text(max_size=140) | json_value,
    },
)
payload_dicts = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from(["4", "3", 4]) | json_value,
        "groupKey": st.text(max_size=20) | json_value,
        "status": st.sampled_from(["firing", "resolved"]) | json_value,
        "receiver": st.text(max_size=10) | json_value,
        "groupLabels": json_value,
        "truncatedAlerts": st.integers(min_value=-2, max_value=2) | json_value,
        "alerts": st.lists(alert_dicts, max_size=3) | json_value,
    },
)


@settings(max_examples=300, deadline=None)
@given(body=payload_dicts | json_value)
def test_arbitrary_json_only_ever_raises_validation_error(body: Any) -> None:
    """Whatever JSON arrives, parsing succeeds or raises ValidationError, never anything else."""
    try:
        payload = AlertmanagerPayload.model_validate_json(json.dumps(body).encode())
    except ValidationError:
        return
    assert payload.version == "4"
    assert payload.alerts
    for alert in payload.alerts:
        assert alert.fingerprint
        assert alert.ends_at is None or alert.ends_at.year > 1


def test_naive_end_time_is_made_utc_too() -> None:
    """endsAt without an offset should be UTC like startsAt, so `ends_at - starts_at` works."""
    body = raw("alertmanager_resolved.json")
    body["alerts"][0]["startsAt"] = "2026-11-22T01:39:20"
    body["alerts"][0]["endsAt"] = "2026-11-22T01:40:26"
    alert = AlertmanagerPayload.model_validate(body).alerts[0]
    assert alert.ends_at == datetime(2026, 11, 22, 1, 40, 26, tzinfo=UTC)

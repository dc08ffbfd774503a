"""Hostile alert payloads at the webhook: one bad alert never costs the good ones.

Each payload starts from the XID 79 capture (the shape a real Alertmanager 0.25 sends) and
adds one alert whose labels an attacker or a broken exporter chose.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from web_harness import Harness

from gpubot.domain.incidents.intake import IntakeKind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "alertmanager"
XID79: dict[str, Any] = json.loads((FIXTURES / "xid79_firing.json").read_bytes())


def _with_extra_alert(**labels: str) -> dict[str, Any]:
    """The XID 79 capture plus a second alert with these labels changed."""
    payload = copy.deepcopy(XID79)
    bad = copy.deepcopy(payload["alerts"][0])
    bad["labels"].update(labels)
    bad["fingerprint"] = "0badbadbadbadbad"
    payload["alerts"].insert(0, bad)  # first, so it cannot hide behind the good one
    return payload


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        pytest.param({"xid": "²"}, "xid", id="superscript-digit"),
        pytest.param({"xid": "٧٩"}, "xid", id="arabic-indic-79"),
        pytest.param({"xid": "79\n"}, "xid", id="xid-trailing-newline"),
        pytest.param({"xid": "7" * 40}, "xid", id="xid-huge"),
        pytest.param({"gpu": "\uff13"}, "gpu", id="fullwidth-gpu-index"),
        pytest.param({"Hostname": "gpu-node-03\n"}, "Hostname", id="node-trailing-newline"),
        pytest.param({"Hostname": "127.0.0.1:8080/x"}, "Hostname", id="node-with-path"),
        pytest.param({"Hostname": "gpu-n\u043ede-03"}, "Hostname", id="node-cyrillic-o"),
        pytest.param({"UUID": "GPU-1/../../v1"}, "UUID", id="uuid-path"),
        pytest.param({"namespace": "Team A"}, "namespace", id="namespace-space"),
        pytest.param({"cluster": "sim\r\nX-Evil: 1"}, "cluster", id="cluster-crlf"),
    ],
)
async def test_a_bad_label_rejects_its_alert_and_the_real_xid79_is_stored(
    harness: Harness, labels: dict[str, str], field: str
) -> None:
    """2xx (a retry cannot cure it), the XID 79 beside it opens its incident, and the bad
    alert is recorded in the audit trail and counted, with the label named."""
    reply = await harness.post(_with_extra_alert(**labels))

    assert reply.status_code == 200
    assert reply.json()["opened"] == 1
    assert reply.json()["rejected"] == 1
    assert reply.json()["rejected_alerts"] == [reply.json()["rejected_alerts"][0]]
    assert reply.json()["rejected_alerts"][0].startswith(f"alerts.0.labels: {field}: ")
    [incident] = await harness.app.store.list_incidents()
    assert incident.node == "gpu-node-07"
    assert incident.labels["xid"] == "79"
    [rejected] = [e for e in await harness.app.store.events() if e.kind == "alert.rejected"]
    assert rejected.args["fingerprint"] == "0badbadbadbadbad"
    assert f"{field}: " in rejected.reason
    samples = await harness.metrics()
    assert samples[("gpubot_alerts_total", (("outcome", "rejected"),))] == 1


async def test_arabic_indic_79_never_starts_the_xid_runbook(harness: Harness) -> None:
    """`٧٩` reads as 79 to int(); gpubot takes it for no code at all."""
    payload = _with_extra_alert(xid="٧٩")
    payload["alerts"] = payload["alerts"][:1]

    reply = await harness.post(payload)

    assert reply.status_code == 200
    assert reply.json() == {
        "status": "stored",
        "rejected": 1,
        "rejected_alerts": [reply.json()["rejected_alerts"][0]],
    }
    assert await harness.app.store.list_incidents() == []
    assert await harness.app.store.list_runs() == []


async def test_every_alert_bad_is_still_2xx_and_each_is_recorded(harness: Harness) -> None:
    payload = _with_extra_alert(xid="²")
    payload["alerts"][1]["labels"]["Hostname"] = "x\n"

    reply = await harness.post(payload)

    assert reply.status_code == 200
    assert reply.json()["rejected"] == 2
    kinds = [e.kind for e in await harness.app.store.events()]
    assert kinds.count("alert.rejected") == 2


async def test_an_alert_that_is_not_an_object_is_rejected_alone(harness: Harness) -> None:
    payload = copy.deepcopy(XID79)
    payload["alerts"] = [7, "x", None, *payload["alerts"]]

    reply = await harness.post(payload)

    assert reply.status_code == 200
    assert reply.json()["opened"] == 1
    assert reply.json()["rejected"] == 3


@pytest.mark.parametrize("depth", [300, 5_000, 100_000])
async def test_deeply_nested_json_is_400_not_500(harness: Harness, depth: int) -> None:
    """The parser's nesting bound answers a one-line 400; nothing recurses into a 500."""
    body = b'{"version": "4", "alerts": ' + b"[" * depth + b"]" * depth + b"}"

    reply = await harness.post(body)

    assert reply.status_code == 400
    assert "recursion" in reply.json()["error"]


async def test_same_fingerprint_and_start_with_other_labels_is_noted_not_dropped(
    harness: Harness,
) -> None:
    """The stored labels stand; the re-send is counted as a conflict, audited, and posted
    to the incident's thread with what differs."""
    first = await harness.post(XID79)
    forged = copy.deepcopy(XID79)
    forged["alerts"][0]["labels"]["Hostname"] = "gpu-node-01"
    forged["alerts"][0]["labels"]["severity"] = "info"

    reply = await harness.post(forged)

    assert first.status_code == reply.status_code == 200
    assert reply.json() == {"status": "stored", IntakeKind.CONFLICT.value: 1}
    await harness.app.service.wait_idle()
    [incident] = await harness.app.store.list_incidents()
    assert incident.node == "gpu-node-07"
    [alert] = await harness.app.store.alerts_for(incident.id)
    assert alert.labels["Hostname"] == "gpu-node-07"
    [event] = [e for e in await harness.app.store.events() if e.kind == "alert.conflict"]
    assert event.incident_id == incident.id
    assert "Hostname: stored 'gpu-node-07', sent 'gpu-node-01'" in event.reason
    posted = [p.text for p in harness.notifier.of("post") if p.incident_id == incident.id]
    assert any("re-sent with other labels" in text for text in posted)
    samples = await harness.metrics()
    assert samples[("gpubot_alerts_total", (("outcome", "conflict"),))] == 1


async def test_an_identical_resend_is_still_a_plain_duplicate(harness: Harness) -> None:
    await harness.post(XID79)

    reply = await harness.post(XID79)

    assert reply.json() == {"status": "stored", "duplicate": 1}


async def test_a_malformed_content_length_is_400_before_any_read(harness: Harness) -> None:
    reply = await harness.client.post(
        "/alertmanager", content=b"{}", headers={"content-length": "1e3"}
    )

    assert reply.status_code == 400

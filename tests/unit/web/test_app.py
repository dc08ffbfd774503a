"""The Starlette app in-process: Alertmanager intake, auth, limits, probes, metrics, XID 79 flow."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from web_harness import Harness, MakeHarness

from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.domain.fleet.cluster import Taint
from gpubot.domain.incidents.correlation import IncidentStatus
from gpubot.domain.runbooks.runs import RunStatus, StepStatus
from gpubot.knowledge.xid.catalog import catalog

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "alertmanager"
FIRING = (FIXTURES / "alertmanager_firing.json").read_bytes()  # real Alertmanager capture
RESOLVED = (FIXTURES / "alertmanager_resolved.json").read_bytes()  # real Alertmanager capture
XID79 = (FIXTURES / "xid79_firing.json").read_bytes()
NODE, GPU = "gpu-node-07", 3
XID_TAINT = Taint(key="gpubot.io/xid", value="79", effect="NoSchedule")


def _one_line_error(reply: httpx.Response) -> str:
    body = reply.json()
    assert set(body) == {"error"}
    assert body["error"]
    assert "\n" not in body["error"]
    return str(body["error"])


# -- intake ----------------------------------------------------------------------------------


async def test_real_capture_is_stored_as_an_incident(harness: Harness) -> None:
    """A payload captured from a real Alertmanager is accepted (200) only once it is stored."""
    reply = await harness.post(FIRING)

    assert reply.status_code == 200
    assert reply.json() == {"status": "stored", "opened": 1}
    incidents = await harness.app.store.list_incidents()
    assert len(incidents) == 1
    incident = incidents[0]
    assert incident.status is IncidentStatus.OPEN
    assert incident.alertname == "GPUHighTemperature"
    assert incident.cluster == "gpu-prod-1"
    assert incident.node == NODE
    alerts = await harness.app.store.alerts_for(incident.id)
    assert [a.fingerprint for a in alerts] == ["9c94cb2fda6e3cd9"]


async def test_resent_payload_is_a_duplicate_not_a_second_incident(harness: Harness) -> None:
    """Alertmanager re-sends on repeat_interval; the second post is reported as a duplicate."""
    first = await harness.post(FIRING)
    second = await harness.post(FIRING)
    await harness.app.service.wait_idle()

    assert first.json() == {"status": "stored", "opened": 1}
    assert second.status_code == 200
    assert second.json() == {"status": "stored", "duplicate": 1}
    incidents = await harness.app.store.list_incidents()
    assert len(incidents) == 1
    assert len(await harness.app.store.alerts_for(incidents[0].id)) == 1
    assert len(harness.notifier.of("open_thread")) == 1


async def test_resolved_capture_resolves_the_incident(harness: Harness) -> None:
    """The real 'resolved' capture for the same alert closes the incident it opened."""
    await harness.post(FIRING)
    reply = await harness.post(RESOLVED)
    await harness.app.service.wait_idle()

    assert reply.status_code == 200
    assert reply.json() == {"status": "stored", "incident_resolved": 1}
    (incident,) = await harness.app.store.list_incidents()
    assert incident.status is IncidentStatus.RESOLVED
    assert incident.resolved_at is not None
    assert [c.text for c in harness.notifier.of("update_root")] == ["resolved"]


@pytest.mark.parametrize("body", [b"{bad", b"", b"\xff\xfe", b'{"version": "4",'])
async def test_malformed_json_is_400_and_stores_nothing(harness: Harness, body: bytes) -> None:
    """Bytes that are not JSON get a one-line reason and leave the store untouched."""
    reply = await harness.post(body)

    assert reply.status_code == 400
    assert "Invalid JSON" in _one_line_error(reply)
    assert await harness.app.store.list_incidents() == []


def _xid79(**changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(XID79)
    payload.update(changes)
    return payload


def _without(key: str) -> dict[str, Any]:
    payload = _xid79()
    del payload[key]
    return payload


def _alert_field(key: str, value: Any) -> dict[str, Any]:
    payload = _xid79()
    payload["alerts"][0][key] = value
    return payload


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        pytest.param(_without("alerts"), "alerts", id="no-alerts-key"),
        pytest.param(_xid79(alerts=[]), "alerts", id="empty-alerts"),
        pytest.param(_xid79(version="3"), "version", id="version-3"),
        pytest.param(_xid79(alerts="x"), "alerts", id="alerts-not-a-list"),
        pytest.param(_xid79(truncatedAlerts="many"), "truncatedAlerts", id="count-a-string"),
    ],
)
async def test_wrong_envelope_is_400_naming_the_field(
    harness: Harness, payload: dict[str, Any], field: str
) -> None:
    """A body whose envelope is the wrong shape is refused with the offending field named."""
    reply = await harness.post(payload)

    assert reply.status_code == 400
    assert _one_line_error(reply).startswith(f"{field}: ")
    assert await harness.app.store.list_incidents() == []


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        pytest.param(_alert_field("labels", ["a"]), "alerts.0.labels", id="labels-a-list"),
        pytest.param(_alert_field("startsAt", "yesterday"), "alerts.0.startsAt", id="bad-time"),
        pytest.param(_alert_field("status", "pending"), "alerts.0.status", id="bad-status"),
        pytest.param(_alert_field("fingerprint", ""), "alerts.0.fingerprint", id="empty-fp"),
    ],
)
async def test_a_malformed_alert_is_rejected_on_its_own_and_recorded(
    harness: Harness, payload: dict[str, Any], field: str
) -> None:
    """A malformed alert cannot be cured by a retry: 2xx, nothing stored for it, and the
    rejection is in the audit trail with the offending field named."""
    reply = await harness.post(payload)

    assert reply.status_code == 200
    assert reply.json()["rejected"] == 1
    assert reply.json()["rejected_alerts"][0].startswith(f"{field}: ")
    assert await harness.app.store.list_incidents() == []
    events = [e for e in await harness.app.store.events() if e.kind == "alert.rejected"]
    assert [e.reason.split(":")[0] for e in events] == [field]


@pytest.mark.parametrize("body", [b"[]", b"null", b'"alerts"'])
async def test_json_that_is_not_an_object_is_400(harness: Harness, body: bytes) -> None:
    """A JSON list, null or string is not a payload: 400, not a crash."""
    reply = await harness.post(body)

    assert reply.status_code == 400
    assert "object" in _one_line_error(reply)


async def test_body_over_the_limit_with_content_length_is_413(
    make_harness: MakeHarness,
) -> None:
    """A declared Content-Length over max_body_bytes is refused before anything is parsed."""
    harness = await make_harness(max_body_bytes=len(XID79) - 1)

    reply = await harness.post(XID79)

    assert reply.status_code == 413
    assert str(len(XID79) - 1) in _one_line_error(reply)
    assert await harness.app.store.list_incidents() == []


async def test_streamed_body_over_the_limit_without_length_is_413(
    make_harness: MakeHarness,
) -> None:
    """A chunked body (no Content-Length) is cut off once it passes max_body_bytes."""
    harness = await make_harness(max_body_bytes=4096)
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(64):
            sent.append(1024)
            yield b" " * 1024

    reply = await harness.client.post("/alertmanager", content=chunks())

    assert reply.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in reply.request.headers
    assert reply.status_code == 413
    _one_line_error(reply)
    assert len(sent) < 64, "the app should stop reading once the limit is passed"
    assert await harness.app.store.list_incidents() == []


async def test_body_exactly_at_the_limit_is_accepted(make_harness: MakeHarness) -> None:
    """The limit is inclusive: a payload of exactly max_body_bytes is still stored."""
    harness = await make_harness(max_body_bytes=len(XID79))

    reply = await harness.post(XID79)

    assert reply.status_code == 200


# -- auth ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-header"),
        pytest.param({"authorization": "Bearer wrong"}, id="wrong-token"),
        pytest.param({"authorization": "Bearer s3cre"}, id="prefix-of-token"),
        pytest.param({"authorization": "s3cret"}, id="no-scheme"),
        pytest.param({"authorization": "Basic s3cret"}, id="other-scheme"),
    ],
)
async def test_webhook_token_refuses_anything_but_the_bearer_token(
    make_harness: MakeHarness, headers: dict[str, str]
) -> None:
    """With webhook_token set, a missing or wrong Authorization is 401 and stores nothing."""
    harness = await make_harness(webhook_token="s3cret")

    reply = await harness.post(XID79, **headers)

    assert reply.status_code == 401
    assert "token" in _one_line_error(reply)
    assert await harness.app.store.list_incidents() == []


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_webhook_token_accepts_the_right_bearer_token(
    make_harness: MakeHarness, scheme: str
) -> None:
    """`Authorization: Bearer <token>` (scheme case-insensitive, RFC 9110): 200."""
    harness = await make_harness(webhook_token="s3cret")

    reply = await harness.post(XID79, authorization=f"{scheme} s3cret")

    assert reply.status_code == 200
    assert len(await harness.app.store.list_incidents()) == 1


async def test_token_is_checked_before_the_body_is_read(make_harness: MakeHarness) -> None:
    """An unauthenticated caller's body is never parsed: 401 for garbage. A declared size
    over the cap is refused before the token too, since that costs no byte read."""
    harness = await make_harness(webhook_token="s3cret", max_body_bytes=1024)

    assert (await harness.post(b"{bad")).status_code == 401
    assert (await harness.post(b" " * 1000)).status_code == 401
    assert (await harness.post(b" " * 4096)).status_code == 413


# -- routes and probes -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_alertmanager_route_is_post_only(harness: Harness, method: str) -> None:
    """Other methods on /alertmanager are 405 and store nothing."""
    reply = await harness.client.request(method, "/alertmanager")

    assert reply.status_code == 405
    assert await harness.app.store.list_incidents() == []


async def test_probes_report_ok_and_ready(harness: Harness) -> None:
    """/healthz says the process is alive; /readyz that the store answers."""
    healthz = await harness.client.get("/healthz")
    readyz = await harness.client.get("/readyz")

    assert (healthz.status_code, healthz.text) == (200, "ok")
    assert (readyz.status_code, readyz.text) == (200, "ready")


async def test_readyz_is_503_while_the_node_caches_fill(harness: Harness) -> None:
    """After a start, until every cluster's node cache has filled (service.background.warm),
    no alert should be routed here: /readyz is 503 and /healthz still 200."""
    service = harness.app.service
    warming = asyncio.Event()
    done = asyncio.Event()
    nodes = service.e.clusters["sim"].nodes

    async def slow(*, timeout_s: float) -> bool:
        warming.set()
        await done.wait()
        return True

    nodes.warm = slow  # type: ignore[method-assign]
    task = asyncio.create_task(service.background.warm())
    await warming.wait()
    readyz = await harness.client.get("/readyz")
    assert (readyz.status_code, readyz.text) == (503, "node caches filling after start")
    assert (await harness.client.get("/healthz")).status_code == 200
    done.set()
    await task
    assert (await harness.client.get("/readyz")).status_code == 200


async def test_warm_leaves_the_first_alert_nothing_to_load(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After warm(): the XID catalog is parsed, and what start-up made is frozen out of
    the garbage collector's full collections (a 1,500-node first LIST once cost the first
    alert a 170 ms collection)."""
    calls: list[str] = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda: calls.append("collect") or collect())
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    catalog.cache_clear()
    await harness.app.service.background.warm()
    assert catalog.cache_info().currsize == 1
    assert calls == ["collect", "freeze"]  # only what is alive after a full collection


async def test_readyz_is_503_when_the_store_fails(make_harness: MakeHarness) -> None:
    """A store that cannot be queried takes the pod out of rotation; liveness is unaffected."""
    harness = await make_harness(failing={"list_incidents"})

    readyz = await harness.client.get("/readyz")
    healthz = await harness.client.get("/healthz")

    assert readyz.status_code == 503
    assert readyz.text == "store unavailable: OperationalError"
    assert healthz.status_code == 200


async def test_metrics_count_requests_by_code_and_alerts_by_outcome(harness: Harness) -> None:
    """/metrics is Prometheus text with one counter per status code and per intake outcome."""
    await harness.post(FIRING)
    await harness.post(FIRING)
    await harness.post(b"{bad")

    reply = await harness.client.get("/metrics")
    samples = await harness.metrics()

    assert reply.headers["content-type"].startswith("text/plain")
    assert "gpubot_webhook_requests_total" in reply.text
    assert samples[("gpubot_webhook_requests_total", (("code", "200"),))] == 2
    assert samples[("gpubot_webhook_requests_total", (("code", "400"),))] == 1
    assert samples[("gpubot_alerts_total", (("outcome", "opened"),))] == 1
    assert samples[("gpubot_alerts_total", (("outcome", "duplicate"),))] == 1
    assert samples[("gpubot_webhook_seconds_count", ())] == 3


async def test_metrics_count_refusals_too(make_harness: MakeHarness) -> None:
    """401 and 413 answers are counted under their own code, and open no incident."""
    harness = await make_harness(webhook_token="s3cret", max_body_bytes=1024)
    await harness.post(b"{}")
    await harness.post(XID79, authorization="Bearer s3cret")

    samples = await harness.metrics()

    assert samples[("gpubot_webhook_requests_total", (("code", "401"),))] == 1
    assert samples[("gpubot_webhook_requests_total", (("code", "413"),))] == 1
    assert ("gpubot_alerts_total", (("outcome", "opened"),)) not in samples


async def test_store_failure_on_ingest_is_503_so_alertmanager_retries(
    make_harness: MakeHarness, caplog: pytest.LogCaptureFixture
) -> None:
    """A store error is 503 (retryable), never 500, and logged; the retry stores the alert."""
    harness = await make_harness(failing={"ingest"})

    with caplog.at_level(logging.ERROR, logger="gpubot.web.app"):
        reply = await harness.post(XID79)

    assert reply.status_code == 503
    assert "retry" in _one_line_error(reply)
    assert any("could not store alerts" in r.getMessage() for r in caplog.records)
    samples = await harness.metrics()
    assert samples[("gpubot_webhook_requests_total", (("code", "503"),))] == 1
    assert ("gpubot_webhook_requests_total", (("code", "500"),)) not in samples
    assert await harness.app.store.list_incidents() == []

    assert harness.flaky is not None
    harness.flaky.failing.clear()  # the database is back
    retry = await harness.post(XID79)

    assert retry.status_code == 200
    assert retry.json() == {"status": "stored", "opened": 1}
    assert len(await harness.app.store.list_incidents()) == 1


# -- the XID 79 runbook through the web hook -------------------------------------------------


AFTER_DRAIN = (
    "evidence",  # kept after the drain, before the reset, reboot or hand-off
    "evidence-failed",
    "reset",
    "verify",
    "diag",
    "untaint",
    "uncordon",
    "released",
    "diag-failed",
    "diag-handoff",
    "reboot",
    "rma",
    "rma-notify",
)


async def test_xid79_alert_quarantines_the_node_and_waits_for_drain_approval(
    harness: Harness,
) -> None:
    """GPU lost on the node: check, cordon, taint and notify run at once; drain asks a human."""
    inject_xid(harness.sim, node=NODE, gpu=GPU)

    reply = await harness.post(XID79)
    await harness.app.service.wait_idle()

    assert reply.status_code == 200
    (run,) = await harness.app.store.list_runs()
    assert run.runbook == "xid79"
    assert run.target == NODE
    assert run.status is RunStatus.WAITING_APPROVAL
    steps = {s.step_id: s.status for s in await harness.app.store.steps(run.id)}
    assert steps == {
        "check": StepStatus.SUCCEEDED,
        "history": StepStatus.SUCCEEDED,
        "owner": StepStatus.SUCCEEDED,
        "leave-alone": StepStatus.SKIPPED,
        "cordon": StepStatus.SUCCEEDED,
        "taint": StepStatus.SUCCEEDED,
        "notify": StepStatus.SUCCEEDED,
        "drain": StepStatus.WAITING_APPROVAL,
        **{s: StepStatus.PENDING for s in AFTER_DRAIN},
    }
    node = await harness.sim.kube.get_node(node=NODE)
    assert node.unschedulable is True
    assert XID_TAINT in node.taints
    (request,) = await harness.app.store.approvals_for(run.id)
    assert request.step_id == "drain"
    assert [c.approval_id for c in harness.notifier.of("ask_approval")] == [request.id]


async def test_xid79_alert_for_a_healthy_node_changes_nothing(harness: Harness) -> None:
    """A replayed or stale XID alert: the live check finds healthy GPUs, so no cordon/drain."""
    reply = await harness.post(XID79)
    await harness.app.service.wait_idle()

    assert reply.status_code == 200
    (run,) = await harness.app.store.list_runs()
    assert run.status is RunStatus.SUCCEEDED
    steps = {s.step_id: s for s in await harness.app.store.steps(run.id)}
    assert steps["check"].status is StepStatus.SUCCEEDED
    assert steps["check"].output["healthy"] is True
    assert {k: s.status for k, s in steps.items() if k != "check"} == {
        s: StepStatus.SKIPPED
        for s in (
            "history",
            "owner",
            "leave-alone",
            "cordon",
            "taint",
            "notify",
            "drain",
            *AFTER_DRAIN,
        )
    }
    node = await harness.sim.kube.get_node(node=NODE)
    assert node.unschedulable is False
    assert XID_TAINT not in node.taints
    assert await harness.app.store.approvals_for(run.id) == []
    assert harness.notifier.of("ask_approval") == []

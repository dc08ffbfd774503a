"""Signed `/gpu` requests through POST /slack/events, as Slack sends them."""

from __future__ import annotations

import json
import time

import pytest
from slack_harness import SlackHarness, sign

pytestmark = pytest.mark.usefixtures("clean_env")


async def reply(h: SlackHarness, name: str = "r1") -> dict[str, object]:
    def got() -> bool:
        return any(c.method == "response_url" for c in h.standin.calls)

    await h.standin.wait_for(got)
    [call] = [c for c in h.standin.calls if c.method == "response_url"]
    return call.args


async def test_status_answers_within_3s_with_the_fleet_table(h: SlackHarness) -> None:
    started = time.monotonic()
    response = await h.slash("status")
    assert response.status_code == 200
    assert time.monotonic() - started < 3.0
    answer = await reply(h)
    assert answer["response_type"] == "ephemeral"
    text = json.dumps(answer["blocks"])
    assert "Cluster sim: 16 GPU nodes" in text
    for cell in (
        "gpu-node-01",
        "gpu-node-16",
        "8x NVIDIA H100 80GB HBM3",
        "cordoned",
        "power/limit",
    ):
        assert cell in text


async def test_node_status_shows_each_gpu_and_its_xid(h: SlackHarness) -> None:
    from gpubot.backends.simulated.scenarios import inject_xid

    inject_xid(h.sim, node="gpu-node-07", gpu=3)
    await h.slash("status sim gpu-node-07")
    text = json.dumps((await reply(h))["blocks"])
    assert "gpu-node-07 (sim)" in text
    assert "79 (1 lost)" in text


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("help", "Usage"),
        ("xid 79", "XID 79"),
        ("idle research", "Idle GPUs on sim in research: 8 allocated GPUs idle"),
        ("idle kube-system", "No idle GPU allocations"),
        ("incidents all", '"No incidents"'),
        ("incidents", '"No open incidents"'),
        ("plan xid79 node=gpu-node-07", "Plan: xid79"),
        ("bogus", "unknown command"),
        ("run xid79 node=$(reboot)", "expected key=value"),
        ("show inc-0000000000", "Not found"),
        ("policy node=gpu-node-07", "no pool matched: the default policy"),
        ("policy node=gpu-node-07 cluster=nope", "unknown cluster"),
        ("policy node=$(reboot)", "not a valid Kubernetes node name"),
        ("policy gpu-node-07", "/gpu policy node="),
    ],
)
async def test_subcommands(h: SlackHarness, text: str, expect: str) -> None:
    assert (await h.slash(text)).status_code == 200
    answer = await reply(h)
    assert answer["response_type"] == "ephemeral"
    assert expect in json.dumps(answer)


async def test_run_dry_run_records_the_slack_user(h: SlackHarness) -> None:
    await h.slash("run xid79 node=gpu-node-07 --dry-run", user="U7")
    assert "Started dry run" in json.dumps(await reply(h))
    await h.settle()
    [run] = await h.app.store.list_runs()
    assert run.requested_by == "U7"
    assert run.dry_run


async def assert_refused(h: SlackHarness, body: bytes, headers: dict[str, str]) -> None:
    response = await h.events(body, headers)
    assert response.status_code == 401
    await h.settle()
    assert [c.method for c in h.standin.calls] == []  # no reply, no auth.test, nothing
    assert await h.app.store.list_runs() == []
    assert await h.app.store.events() == []


async def test_missing_signature_is_401_without_effect(h: SlackHarness) -> None:
    await assert_refused(h, h.slash_body("run xid79 node=gpu-node-07"), {})


async def test_forged_signature_is_401_without_effect(h: SlackHarness) -> None:
    body = h.slash_body("run xid79 node=gpu-node-07")
    await assert_refused(h, body, sign(body, secret="not-the-secret"))


async def test_tampered_body_is_401_without_effect(h: SlackHarness) -> None:
    headers = sign(h.slash_body("status"))
    await assert_refused(h, h.slash_body("run xid79 node=gpu-node-07"), headers)


async def test_old_timestamp_is_401_without_effect(h: SlackHarness) -> None:
    body = h.slash_body("run xid79 node=gpu-node-07")
    await assert_refused(h, body, sign(body, ts=int(time.time()) - 6 * 60))

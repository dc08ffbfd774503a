"""The idle-GPU report in Slack: the scheduled job posts the report to the report channel and
uploads its PNG chart with files_upload_v2 into the report's thread; `/gpu idle` answers."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_harness import SlackHarness, slack_harness


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    reports = {"idle": {"channel": "#gpu-reports", "prices": {"H100": 12.5}}}
    async with slack_harness(tmp_path, monkeypatch, reports=reports) as harness:
        yield harness


async def test_scheduled_report_posts_message_and_uploads_chart(h: SlackHarness) -> None:
    assert h.app.scheduler is not None
    result = await h.app.scheduler.job.run()
    await h.settle()
    assert result.to_retry == []
    [root] = h.standin.roots("#gpu-reports")
    text = h.standin.text_of(root)
    assert "Idle GPUs on sim: 8 allocated GPUs idle, $2,400 over the last 24 h" in text
    assert "vllm-sandbox" in text
    assert "Deployment/vllm-sandbox" in text
    assert "research" in text

    methods = [c.method for c in h.standin.calls]
    assert methods.count("files.getUploadURLExternal") == 1
    [upload] = [c for c in h.standin.calls if c.method == "upload"]
    assert upload.args["bytes"] > 10_000  # a real PNG, not a placeholder
    [complete] = [c for c in h.standin.calls if c.method == "files.completeUploadExternal"]
    assert complete.args["channel_id"] == root.channel
    assert complete.args["thread_ts"] == root.ts  # the chart sits in the report's thread
    files = json.loads(complete.args["files"])
    assert files[0]["title"].startswith("Idle GPUs on sim")
    assert h.standin.roots("#gpu-incidents") == []  # not in the incident channel


async def test_gpu_idle_answers_with_the_namespace_report(h: SlackHarness) -> None:
    """`/gpu idle research` lists that namespace's idle pods with cost; the answer goes to
    the person who asked (ephemeral), within Slack's 3 s ack."""
    response = await h.slash("idle research")
    assert response.status_code == 200

    def got() -> bool:
        return any(c.method == "response_url" for c in h.standin.calls)

    await h.standin.wait_for(got)
    [call] = [c for c in h.standin.calls if c.method == "response_url"]
    text = json.dumps(call.args)
    assert call.args["response_type"] == "ephemeral"
    assert "Idle GPUs on sim in research: 8 allocated GPUs idle" in text
    assert "jupyter-bob" in text
    assert "$600" in text  # 2 GPUs x 24 h x $12.50

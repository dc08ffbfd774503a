"""Shared scenario fixtures: a clean environment, and the Slack harness with its defaults."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_harness import SlackHarness, slack_harness


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPUBOT_ or SLACK_ variable from the machine reaches the settings under test."""
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@pytest.fixture
async def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlackHarness]:
    """The Slack harness with the built-in runbooks; a test module may define its own."""
    async with slack_harness(tmp_path, monkeypatch) as harness:
        yield harness

"""serve(): a cap that allows nothing is logged at start-up; on exit, steps stop before the
companions (the Lease) do, so no other replica starts a step this one still runs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.config import load_settings
from gpubot.web.server import serve
from gpubot.wiring import build_app


class StoppedServer:
    """uvicorn's Server as SIGTERM leaves it: serve() returns."""

    async def serve(self) -> None:
        return None


class Companion:
    def __init__(self, service: object, seen: list[str]) -> None:
        self.service, self.seen = service, seen

    async def start(self) -> None:
        self.seen.append("start")

    async def stop(self) -> None:
        # What the Lease sees when it is released: the executor already stopped.
        stopping = self.service.executor._stopping  # type: ignore[attr-defined]
        self.seen.append(f"stop (steps stopped: {stopping})")


async def test_a_cap_that_allows_nothing_is_logged_and_steps_stop_before_the_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/t.db"},
        policy={"blast_radius": {"max_cordoned_count": 0}},
    )
    app = build_app(settings, notifier=RecordingNotifier())
    seen: list[str] = []
    try:
        with caplog.at_level(logging.WARNING, logger="gpubot.web.server"):
            await serve(
                app.service,
                StoppedServer(),  # type: ignore[arg-type]
                companions=[Companion(app.service, seen)],
                shutdown_grace_s=2,
            )
    finally:
        await app.aclose()
    assert seen == ["start", "stop (steps stopped: True)"]
    warned = [r.getMessage() for r in caplog.records]
    assert any(
        "allows no cordon at all: policy.blast_radius.max_cordoned_count is 0" in m for m in warned
    ), warned


async def test_the_default_policy_logs_no_blast_radius_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = load_settings(None, store={"url": f"sqlite:///{tmp_path}/t.db"})
    app = build_app(settings, notifier=RecordingNotifier())
    try:
        with caplog.at_level(logging.WARNING, logger="gpubot.web.server"):
            await serve(app.service, StoppedServer(), shutdown_grace_s=2)  # type: ignore[arg-type]
    finally:
        await app.aclose()
    assert not [r for r in caplog.records if "blast-radius" in r.getMessage()]


async def test_serve_returns_what_is_left_of_the_grace_for_the_exit(tmp_path: Path) -> None:
    """What the process does after serve() (sending queued Slack messages) gets the rest of
    the shutdown grace, not a wait of its own on top of it."""
    settings = load_settings(None, store={"url": f"sqlite:///{tmp_path}/t.db"})
    app = build_app(settings, notifier=RecordingNotifier())
    try:
        left = await serve(app.service, StoppedServer(), shutdown_grace_s=30)  # type: ignore[arg-type]
    finally:
        await app.aclose(flush_seconds=1.0)
    assert 0 < left <= 30  # nothing ran: almost all of it

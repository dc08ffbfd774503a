"""`serve`'s log: JSON and text lines, secrets redacted, hostile text kept on one line, and the
events that matter (start-up, listening, recovery, leadership, step outcomes)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.backends.simulated import simulated_state
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.cli import run
from gpubot.cli.serve import log_start, secret_values, setup_logging
from gpubot.config import load_settings
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.engine.clock import FakeClock
from gpubot.engine.telemetry import LeaderLog
from gpubot.logs import MAX_MESSAGE, SafeRecords, configure_logging, json_formatter, redact_url
from gpubot.web.server import make_server
from gpubot.wiring import build_app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
XID79 = (FIXTURES / "xid79_firing.json").read_bytes()


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """What configure_logging writes, with its handler removed (and levels reset) after."""
    out = io.StringIO()
    yield out
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == "gpubot"]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    for name in ("gpubot", "gpubot.audit"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_json_lines_parse_and_carry_the_structured_fields(stream: io.StringIO) -> None:
    """One JSON object per record: ts, level, logger, message and the `extra` fields."""
    configure_logging(fmt="json", stream=stream)
    logging.getLogger("gpubot.engine.telemetry").info(
        "step %s: %s", "cordon", "succeeded", extra={"event": "step.outcome", "run_id": "run-1"}
    )

    (record,) = lines(stream)
    assert record["level"] == "INFO"
    assert record["logger"] == "gpubot.engine.telemetry"
    assert record["message"] == "step cordon: succeeded"
    assert record["event"] == "step.outcome"
    assert record["run_id"] == "run-1"
    assert record["ts"].endswith("+00:00")


def test_auto_is_json_when_stderr_is_not_a_terminal(stream: io.StringIO) -> None:
    """A container's stderr is a pipe: `auto` picks JSON there (a StringIO is no terminal)."""
    configure_logging(fmt="auto", stream=stream)
    logging.getLogger("gpubot.x").warning("hello")

    assert lines(stream)[0]["message"] == "hello"


def test_text_keeps_a_hostile_newline_on_one_line(stream: io.StringIO) -> None:
    """A newline in a label cannot start a line that looks like a record of its own."""
    configure_logging(fmt="text", stream=stream)
    label = "gpu-node-01\n2026-11-25 00:00:00,000 INFO gpubot: approved by admin"
    logging.getLogger("gpubot.x").warning(
        "alert for %s", label, extra={"event": "alert.rejected", "reason": label}
    )

    text = stream.getvalue()
    assert text.count("\n") == 1
    assert "gpu-node-01\\n2026-11-25" in text
    assert text.rstrip("\n").endswith(
        '[event=alert.rejected reason="gpu-node-01\\n2026-11-25 '
        '00:00:00,000 INFO gpubot: approved by admin"]'
    )


def test_a_call_whose_arguments_do_not_fit_is_still_one_line() -> None:
    """A bug in a log call must not raise into the code that logged."""
    record = logging.LogRecord("gpubot.x", logging.WARNING, "f.py", 1, "%d runs", ("x",), None)

    assert SafeRecords().filter(record)
    assert json.loads(json_formatter().format(record))["message"] == "%d runs ('x',)"


def test_a_long_message_is_cut(stream: io.StringIO) -> None:
    """A 10,000-character message is cut at MAX_MESSAGE and says how much was left out."""
    configure_logging(fmt="json", stream=stream)
    logging.getLogger("gpubot.x").warning("%s", "x" * 10_000)

    (record,) = lines(stream)
    assert len(record["message"]) < MAX_MESSAGE + 40
    assert record["message"].endswith("(8000 more characters)")


def test_database_passwords_in_urls_are_redacted() -> None:
    """A URL's password becomes *** wherever the URL stands in the text; no password, no change."""
    assert redact_url("postgresql://gpubot:s3cr3t@db:5432/gpubot") == (
        "postgresql://gpubot:***@db:5432/gpubot"
    )
    assert redact_url("cannot open postgresql+psycopg://u:p%40ss@h/db: refused") == (
        "cannot open postgresql+psycopg://u:***@h/db: refused"
    )
    assert redact_url("sqlite:///var/lib/gpubot.db") == "sqlite:///var/lib/gpubot.db"


def test_no_secret_from_the_settings_reaches_a_line(
    stream: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tokens, the signing secret and the agent master key are replaced by *** wherever they
    appear: in the message, in a field, in a traceback."""
    secrets = {
        "SLACK_BOT_TOKEN": "xoxb-123-456-abcdef",
        "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
        "SLACK_APP_TOKEN": "xapp-1-A0-123-abc",
        "GPUBOT_WEBHOOK_TOKEN": "webhook-token-42",
        "GPUBOT_AGENT_TOKEN": "agent-master-key-0001",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(None, store={"url": "postgresql://bot:dbpass99@db/gpubot"})
    assert set(secret_values(settings)) == set(secrets.values())
    configure_logging(fmt="json", secrets=secret_values(settings), stream=stream)
    log = logging.getLogger("gpubot.x")

    log.warning(
        "token %s and %s", *list(secrets.values())[:2], extra={"reason": secrets["SLACK_APP_TOKEN"]}
    )
    try:
        raise RuntimeError(f"agent said {secrets['GPUBOT_AGENT_TOKEN']} at {settings.store.url}")
    except RuntimeError:
        log.exception("agent call failed (%s)", secrets["GPUBOT_WEBHOOK_TOKEN"])

    text = stream.getvalue()
    for value in (*secrets.values(), "dbpass99"):
        assert value not in text
    first, second = lines(stream)
    assert first["message"] == "token *** and ***"
    assert first["reason"] == "***"
    assert "postgresql://bot:***@db/gpubot" in second["exc_info"]


def test_the_flags_win_over_the_config_file(
    stream: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """log.format: json and log.level: info in the file; --log-format text and --log-level
    warning given: text lines, and an INFO record is not written."""
    monkeypatch.setattr("sys.stderr", stream)
    settings = load_settings(None, log={"format": "json", "level": "info"})
    setup_logging(settings, fmt="text", level="warning")
    logging.getLogger("gpubot.x").info("not shown")
    logging.getLogger("gpubot.x").warning("shown")

    assert stream.getvalue().endswith("WARNING gpubot.x: shown\n")
    assert "not shown" not in stream.getvalue()


def test_serve_help_names_the_log_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """`gpubot serve --help` lists --log-format and --log-level with their choices."""
    with pytest.raises(SystemExit):
        run(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())

    assert "--log-format {auto,json,text}" in out
    assert "--log-level {debug,info,warning,error}" in out


def test_start_up_lines_name_the_store_clusters_slack_and_runbooks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store's URL without its password, each cluster, the Slack mode and every runbook
    by name: one record each, with the event name as a field."""
    settings = load_settings(
        None,
        store={"url": "postgresql://gpubot:pw-in-url@db:5432/gpubot"},
        slack={"mode": "http"},
        clusters=[{"name": "sim"}, {"name": "lab", "backend": "simulated"}],
    )
    runbooks = [SimpleNamespace(runbook=SimpleNamespace(name=n)) for n in ("xid79", "thermal")]
    app = SimpleNamespace(settings=settings, runbooks=runbooks)

    with caplog.at_level(logging.INFO, logger="gpubot.serve"):
        log_start(app)  # type: ignore[arg-type]

    by_event = {r.event: r.getMessage() for r in caplog.records}  # type: ignore[attr-defined]
    assert by_event["serve.store"] == "store: postgresql://gpubot:***@db:5432/gpubot"
    assert by_event["serve.clusters"] == "2 cluster(s) configured: sim (simulated), lab (simulated)"
    assert by_event["serve.slack"] == (
        "slack: http mode set, but SLACK_BOT_TOKEN is not: threads go to stdout"
    )
    assert by_event["serve.runbooks"] == "2 runbook(s) loaded: thermal, xid79"
    assert "pw-in-url" not in caplog.text


async def test_listening_is_logged_with_the_bound_address_and_access_lines_on_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Port 0 in the config: the line names the port the kernel gave. With log.access_log,
    uvicorn's line per request goes through the same handlers as gpubot's own records."""
    settings = load_settings(None, store={"url": f"sqlite:///{tmp_path}/t.db"})
    app = build_app(settings, notifier=RecordingNotifier())
    server = make_server(
        app.service,
        host="127.0.0.1",
        port=0,
        webhook_token=None,
        max_body_bytes=1 << 20,
        access_log=True,
    )
    started = asyncio.Event()
    startup = server.startup

    async def announced(sockets: Any = None) -> None:
        await startup(sockets)
        started.set()

    server.startup = announced  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.INFO, logger="gpubot.web.server"):
            task = asyncio.create_task(server.serve())
            await asyncio.wait_for(started.wait(), timeout=30)
            port = server.servers[0].sockets[0].getsockname()[1]
            async with httpx.AsyncClient() as client:
                health = await client.get(f"http://127.0.0.1:{port}/healthz")
            server.should_exit = True
            await task
    finally:
        await app.aclose()

    (line,) = [r for r in caplog.records if getattr(r, "event", None) == "serve.listening"]
    assert line.getMessage() == f"listening on http://127.0.0.1:{port}"
    assert health.status_code == 200
    # One request, one line. A handler that an earlier test in this process left on a logger
    # between uvicorn.access and the root can hand the same record to the capture twice.
    (access,) = {r.getMessage() for r in caplog.records if r.name == "uvicorn.access"}
    assert '"GET /healthz HTTP/1.1" 200' in access


async def test_recovery_and_step_outcomes_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An XID 79 incident: each step's outcome at INFO with run, incident, cluster, action
    and result; after a restart, the runs recovered are counted in one line."""
    settings = load_settings(
        None,
        store={"url": f"sqlite:///{tmp_path}/t.db"},
        policy={"groups": {"oncall": {"users": ["U1"]}}},
    )
    app = build_app(settings, notifier=RecordingNotifier(), clock=FakeClock())
    inject_xid(simulated_state(app.clusters["sim"]), node="gpu-node-07", gpu=3)
    try:
        with caplog.at_level(logging.INFO, logger="gpubot.engine"):
            summary = await app.service.ingest(AlertmanagerPayload.model_validate_json(XID79))
            await app.service.process(summary)
            await app.service.wait_idle()
    finally:
        await app.aclose()
    outcomes = [r for r in caplog.records if getattr(r, "event", None) == "step.outcome"]
    (run,) = {r.run_id for r in outcomes}  # type: ignore[attr-defined]
    cordon = next(r for r in outcomes if r.step == "cordon")  # type: ignore[attr-defined]
    assert cordon.levelno == logging.INFO
    assert (cordon.action, cordon.result, cordon.cluster) == (  # type: ignore[attr-defined]
        "node.cordon",
        "succeeded",
        "sim",
    )
    assert cordon.incident_id  # type: ignore[attr-defined]
    assert cordon.getMessage() == f"step cordon (node.cordon) of run {run}: succeeded"

    caplog.clear()
    again = build_app(settings, notifier=RecordingNotifier(), clock=FakeClock())
    try:
        with caplog.at_level(logging.INFO, logger="gpubot.engine"):
            await again.service.background.recover()
            await again.service.wait_idle()
    finally:
        await again.aclose()
    (recovered,) = [r for r in caplog.records if getattr(r, "event", None) == "runs.recovered"]
    assert recovered.getMessage() == "recovered 1 unfinished run(s) from the store"


def test_leadership_changes_are_logged_once_each(caplog: pytest.LogCaptureFixture) -> None:
    """Gained, kept (nothing), lost (a WARNING), gained again."""
    watch = LeaderLog()
    with caplog.at_level(logging.INFO, logger="gpubot.engine.telemetry"):
        for leading in (True, True, False, False, True):
            watch.check(leading)

    assert [(r.event, r.levelname) for r in caplog.records] == [  # type: ignore[attr-defined]
        ("leader.gained", "INFO"),
        ("leader.lost", "WARNING"),
        ("leader.gained", "INFO"),
    ]

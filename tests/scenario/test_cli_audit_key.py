"""One audit chain, one key: a break-glass vote cast under another GPUBOT_AUDIT_KEY than
serve's (or none) is refused before anything is written, a serve holding the wrong key is not
ready, and read commands find their config as kubectl does without ever creating a database."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from test_cli import Workspace, assert_one_line_error, gpubot, serving
from test_cli_breakglass_serve import ALERT, _until, signed_workspace

KEY = {"GPUBOT_AUDIT_KEY": "k1-serve-and-every-operator"}
OTHER_KEY = {"GPUBOT_AUDIT_KEY": "k2-a-stale-copy"}


def alice_key(ws: Workspace) -> Path:
    """The operator's private key, made by signed_workspace beside the config."""
    return ws.dir / "alice"


def _workspace(tmp_path: Path) -> Workspace:
    return signed_workspace(tmp_path)[0]


def test_a_vote_without_serves_key_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """serve seals the chain with K1. `gpubot approve` without a key, then with a stale key,
    exits 2 with one line and leaves the approval pending and the trail as it was; with K1 it
    is counted, serve runs the step, and the whole trail verifies under K1."""
    ws = _workspace(tmp_path)
    with serving(ws, env=KEY) as served, httpx.Client(base_url=served.base_url) as client:
        assert client.post("/alertmanager", content=json.dumps(ALERT)).status_code == 200
        _until(ws, served, "SELECT status FROM runs", [("waiting_approval",)])
        [(run_id,)] = ws.sql("SELECT id FROM runs")
        events, votes = ws.count("audit"), ws.sql("SELECT votes FROM approvals")

        for env, held in ((None, "no GPUBOT_AUDIT_KEY"), (OTHER_KEY, "key id")):
            refused = gpubot(
                "approve",
                run_id,
                "--config",
                ws.config,
                "--key",
                alice_key(ws),
                cwd=tmp_path,
                env=env,
            )
            line = assert_one_line_error(refused, "audit chain is sealed with key id", held)
            assert refused.returncode == 2, line
            assert ws.count("audit") == events
            assert ws.sql("SELECT votes FROM approvals") == votes
            assert client.get("/readyz").status_code == 200  # serve's own key still fits

        approved = gpubot(
            "approve", run_id, "--config", ws.config, "--key", alice_key(ws), cwd=tmp_path, env=KEY
        )
        assert approved.returncode == 0, approved.stderr
        _until(ws, served, "SELECT status FROM runs", [("succeeded",)])
    assert "Traceback" not in served.output()
    verified = gpubot("audit", "verify", "--config", ws.config, cwd=tmp_path, env=KEY)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_serve_with_another_key_than_the_chains_is_not_ready(tmp_path: Path) -> None:
    """The chain was sealed with K1; a serve started with K2 answers /readyz 503 naming the
    mismatch (so no Service sends it alerts), and writes nothing under K2."""
    ws = _workspace(tmp_path)
    with serving(ws, env=KEY) as served, httpx.Client(base_url=served.base_url) as client:
        assert client.get("/readyz").status_code == 200
    events = ws.count("audit")
    with serving(ws, env=OTHER_KEY) as served, httpx.Client(base_url=served.base_url) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert "audit key: the audit chain is sealed with key id" in ready.text
    assert "/readyz answers 503 until the keys agree" in served.output()
    assert "Traceback" not in served.output()
    assert ws.count("audit") == events
    verified = gpubot("audit", "verify", "--config", ws.config, cwd=tmp_path, env=KEY)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_read_commands_never_create_a_database(tmp_path: Path) -> None:
    """No --config, no GPUBOT_CONFIG, no file at the default path: `runs` and `incidents`
    say where they looked, exit 2 and leave no ./gpubot.db behind."""
    for command in (("runs",), ("incidents",), ("approve", "run-x")):
        result = gpubot(*command, cwd=tmp_path)
        assert_one_line_error(result, "nothing was created", "GPUBOT_CONFIG")
        assert result.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_gpubot_config_names_the_config_file(tmp_path: Path) -> None:
    """GPUBOT_CONFIG stands in for --config (the flag wins); a name that is no file is one
    line naming the variable."""
    ws = _workspace(tmp_path)
    with serving(ws):
        pass  # serve created the database and its tables
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = gpubot("runs", "--json", cwd=elsewhere, env={"GPUBOT_CONFIG": str(ws.config)})
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == []
    missing = gpubot("runs", cwd=elsewhere, env={"GPUBOT_CONFIG": str(tmp_path / "nope.yaml")})
    assert_one_line_error(missing, "GPUBOT_CONFIG=", "no such config file")
    flag = gpubot(
        "runs", "--config", ws.config, cwd=elsewhere, env={"GPUBOT_CONFIG": "/nonexistent"}
    )
    assert flag.returncode == 0, flag.stderr
    assert list(elsewhere.iterdir()) == []

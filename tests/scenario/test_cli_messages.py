"""What the console script says: its version, a bad or busy serve address, which audit
database it reads, where a chart went, and a config's unquoted `off`."""

from __future__ import annotations

import socket
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from test_cli import assert_one_line_error, gpubot

from gpubot.backends.store import open_store
from gpubot.cli.audit import database_line
from gpubot.config import load_settings
from gpubot.errors import ConfigError


def test_version_prints_the_installed_package_version(tmp_path: Path) -> None:
    """`gpubot --version` prints the version importlib.metadata reports, and exits 0."""
    result = gpubot("--version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"gpubot {version('gpubot')}"


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_serve_port_out_of_range_is_one_line(tmp_path: Path, port: str) -> None:
    """A --port outside 1-65535 is one line naming it, exit 2, before anything starts."""
    result = gpubot("serve", "--port", port, cwd=tmp_path, timeout=30)
    assert result.returncode == 2
    assert_one_line_error(result, f"--port {port}", "1 to 65535")
    assert not (tmp_path / "gpubot.db").exists()


def test_serve_on_a_busy_port_says_which_address_in_one_line(tmp_path: Path) -> None:
    """Another process listening on the address: one line with host:port, exit 1."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = gpubot("serve", "--host", "127.0.0.1", "--port", str(port), cwd=tmp_path)
    assert result.returncode == 1
    assert_one_line_error(result, f"127.0.0.1:{port}", "address already in use")
    assert result.stdout == ""


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("word", ["off", "false", "no", "'off'"])
def test_slack_mode_off_unquoted_is_off(tmp_path: Path, word: str) -> None:
    """YAML reads `off`, `false`, `no` unquoted as false: slack.mode is then "off"."""
    settings = load_settings(_config(tmp_path, f"slack: {{mode: {word}}}\n"))
    assert settings.slack.mode == "off"


def test_slack_mode_on_is_refused_naming_the_modes(tmp_path: Path) -> None:
    """YAML's `on` is true, which names no mode: refused, saying which modes there are."""
    with pytest.raises(ConfigError) as caught:
        load_settings(_config(tmp_path, "slack: {mode: on}\n"))
    assert "slack.mode" in str(caught.value)
    assert "socket or http" in str(caught.value)


async def test_audit_commands_name_the_database_they_read(tmp_path: Path) -> None:
    """verify and export say on stderr which database they read; stdout stays the output."""
    db = tmp_path / "audit.db"
    await open_store(f"sqlite:///{db}").close()
    config = _config(tmp_path, yaml.safe_dump({"store": {"url": f"sqlite:///{db}"}}))
    for command in ("verify", "export"):
        result = gpubot("audit", command, "--config", config, cwd=tmp_path)
        assert result.stderr.splitlines()[0] == f"audit: database sqlite:///{db}", command
        assert "audit: database" not in result.stdout


def test_audit_database_password_is_redacted() -> None:
    """The database line shows a PostgreSQL URL with its password as ***."""
    url = "postgresql+psycopg://bot:hunter2@db.example:5432/gpubot"
    assert (
        database_line(url) == "audit: database postgresql+psycopg://bot:***@db.example:5432/gpubot"
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_report_png_says_where_it_wrote(tmp_path: Path, as_json: bool) -> None:
    """`report idle --png FILE` names the file it wrote (on stderr under --json)."""
    config = _config(
        tmp_path,
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{tmp_path / 'gpubot.db'}"},
                "clusters": [{"name": "sim", "state_file": str(tmp_path / "sim.json")}],
            }
        ),
    )
    png = tmp_path / "idle.png"
    flags = ["--json"] if as_json else []
    result = gpubot("report", "idle", *flags, "--png", png, "--config", config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert png.is_file()
    said = result.stderr if as_json else result.stdout
    assert f"chart written to {png} (" in said

"""policy.operator_keys comes from the config file only; the old account mapping is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpubot.config import load_settings
from gpubot.errors import ConfigError

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDOcMdfgnYJCyBUQINi1SlI0jzL7T3PVoT5tUus8wdgQ op1"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("GPUBOT_"):
            monkeypatch.delenv(name)


def _file(tmp_path: Path, policy: dict[str, object]) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"policy": policy}))
    return path


def test_keys_from_the_file_with_their_fingerprint(tmp_path: Path) -> None:
    settings = load_settings(_file(tmp_path, {"operator_keys": [{"key": KEY, "user": "U2"}]}))
    [entry] = settings.policy.operator_keys
    assert (entry.user, entry.fingerprint()) == (
        "U2",
        "SHA256:NgB3mBlRPhwyP0Odnn7fXk5Ue2h97ezbTCDFvWZNhjA",
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GPUBOT_POLICY__OPERATORS__ROOT", "U3"),
        ("GPUBOT_POLICY__OPERATOR_KEYS", f'[{{"key": "{KEY}", "user": "U3"}}]'),
        ("gpubot_policy__operator_keys", "[]"),
        ("GPUBOT_POLICY", '{"operator_keys": []}'),
        ("GPUBOT_POLICY", '{"operators": {"root": "U3"}}'),
    ],
)
def test_the_environment_cannot_name_operators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    path = _file(tmp_path, {"operator_keys": [{"key": KEY, "user": "U2"}]})
    with pytest.raises(ConfigError, match="read from the config file only"):
        load_settings(path)


def test_other_policy_keys_still_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUBOT_POLICY__DIAG_LEVEL", "2")
    settings = load_settings(_file(tmp_path, {"operator_keys": [{"key": KEY, "user": "U2"}]}))
    assert settings.policy.diag_level == 2
    assert [k.user for k in settings.policy.operator_keys] == ["U2"]


def test_the_old_account_mapping_and_bad_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"operators .* is no longer read.*operator_keys"):
        load_settings(_file(tmp_path, {"operators": {"alice": "U1"}}))
    twice = [{"key": KEY, "user": "U2"}, {"key": KEY.replace("op1", "again"), "user": "U3"}]
    with pytest.raises(ConfigError, match="listed twice"):
        load_settings(_file(tmp_path, {"operator_keys": twice}))
    for bad in ({"key": "ssh-dss AAAA", "user": "U2"}, {"key": KEY, "user": "alice"}):
        with pytest.raises(ConfigError):
            load_settings(_file(tmp_path, {"operator_keys": [bad]}))

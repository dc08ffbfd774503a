"""`gpubot agent`'s log set-up: the node tokens read from files are secrets like the rest."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from gpubot.cli.serve import setup_logging
from gpubot.config import load_settings

READ = "node-read-token-from-a-file-0123"
MUTATE = "node-mutate-token-from-a-file-4567"


def test_node_tokens_from_files_are_redacted_in_every_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "read-token").write_text(READ + "\n")
    (tmp_path / "mutate-token").write_text(MUTATE + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"agent:\n  read_token_file: {tmp_path / 'read-token'}\n"
        f"  mutate_token_file: {tmp_path / 'mutate-token'}\n"
        "log:\n  format: text\n"
    )
    for name in ("GPUBOT_AGENT_READ_TOKEN", "GPUBOT_AGENT_MUTATE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(config)
    read, mutate = settings.agent_node_tokens()
    assert (read, mutate) == (READ, MUTATE)
    handler = setup_logging(settings, extra_secrets=(read, mutate))
    stream = io.StringIO()
    handler.setStream(stream)  # type: ignore[attr-defined]
    try:
        logging.getLogger("gpubot.agent.test").warning(
            "got %s and %s", READ, MUTATE, extra={"reason": f"token {MUTATE}"}
        )
    finally:
        logging.getLogger().removeHandler(handler)
    out = stream.getvalue()
    assert READ not in out
    assert MUTATE not in out
    assert "got *** and ***" in out
    assert 'reason="token ***"' in out

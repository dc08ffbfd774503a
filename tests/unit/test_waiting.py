"""The suite's wait helper: a process that exits while waited for fails the wait at once,
with its output; a condition that holds ends the wait at once."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from waiting import LIMIT_S, wait_until

CRASH = "import sys; print('port 8080 already in use'); sys.exit(3)"


def test_an_exited_process_fails_the_wait_at_once_with_its_output() -> None:
    started = time.monotonic()
    with (
        subprocess.Popen(
            [sys.executable, "-c", CRASH], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        ) as proc,
        pytest.raises(AssertionError) as failed,
    ):
        wait_until(lambda: False, "serve to answer /healthz", proc=proc)
    assert time.monotonic() - started < LIMIT_S  # not the whole limit: it ended at the exit
    assert "exited (3) before serve to answer /healthz" in str(failed.value)
    assert "port 8080 already in use" in str(failed.value)


def test_the_output_comes_from_the_process_log_when_given(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", CRASH], stdout=out)
    with pytest.raises(AssertionError, match="port 8080 already in use"):
        wait_until(lambda: False, "serve", proc=proc, output=log)
    proc.wait()


def test_a_condition_that_holds_ends_the_wait() -> None:
    wait_until(lambda: True, "nothing")
    assert LIMIT_S >= 60

"""A SIGKILL in other words (brackets, after a progress bar, a launcher's teardown): killed,
with the cause unknown when the log does not show it.

Synthetic lines in each family's own words."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def _launcher(code: str) -> str:
    return (
        "[2024-05-01 10:00:01,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 41\n"
        "[2024-05-01 10:00:01,120] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 42\n"
        "[2024-05-01 10:00:01,150] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
        f"'-u', 'train.py', '--local_rank=1'] exits with return code = {code}\n"
    )


def test_launcher_teardown_after_a_sigkill_or_alone_stays_unknown() -> None:
    """A worker that itself exited with -9, or a teardown with no status given, is still a
    SIGKILL whose cause the log does not give."""
    assert classify(_launcher("-9")).cls == "killed_unknown"
    alone = _launcher("-9").splitlines()[0]
    assert classify(alone).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        # docker ps and docker inspect's status column
        '4f1c2a3b9d0e   trainer:latest   "python train.py"   2 hours ago   Exited (137) 5 '
        "minutes ago   trainer\n",
        # a shell trace of an exit handler
        "+[05:25:15] exit_handler\n+[05:25:15] rc=137\n",
        "worker exited, ret=-9\n",
        # MPICH's Hydra banner: the signal's number
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4242 RUNNING AT "
        "node-3\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n",
        "=   KILLED BY SIGNAL: 9 (Killed)\n",
        "Process ended with signal: 9\n",
    ],
)
def test_sigkill_in_other_words_is_killed_with_the_cause_unknown(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "killed_unknown", triage.family
    assert triage.evidence, "the verdict cites the line that shows the SIGKILL"


@pytest.mark.parametrize(
    "text",
    [
        "[worker-0] terminated with exit code (137). Reason [Error]. Message:\n",
        " 20%|████                | 216/1063 [00:27<02:17,  6.17it/s]Killed\n",
    ],
)
def test_sigkill_in_brackets_or_after_a_progress_bar(text: str) -> None:
    assert classify(text).cls == "killed_unknown"


@pytest.mark.parametrize(
    "text",
    [
        "After a few minutes the container exits with a code of 137 and restarts.",
        "the job exited with exit status of 137, nothing in its log",
        "It stops with an exit code of 137 every night.",
    ],
)
def test_sigkill_told_in_a_sentence_is_killed_with_the_cause_unknown(text: str) -> None:
    triage = classify(text)
    assert (triage.cls, triage.family) == ("killed_unknown", "sigkill_cause_unknown")


@pytest.mark.parametrize(
    "text",
    [
        "the container exits with a code of 1 after a config error",
        "exit code of 1370 is not a signal",
    ],
)
def test_other_statuses_told_in_a_sentence_are_not_sigkill(text: str) -> None:
    assert classify(text).cls != "killed_unknown"

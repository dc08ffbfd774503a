"""The families of the fifty-seventh part (desktop and workstation users of ML tools): each
is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


def test_directmls_tensor_refused_is_the_cards_memory() -> None:
    text = (
        "RuntimeError: Could not allocate tensor with 4719616 bytes. There is not enough GPU "
        "video memory available!\n"
    )
    assert classify(text).cls == "cuda_oom"


@pytest.mark.parametrize(
    "text",
    [
        "zsh: killed     python run.py\nSo, the issue was not having enough memory, not the "
        "library.\n",
        "[1]    4242 killed     python train.py\nThe monitor shows it maxing out at 15.5gb RAM "
        "and then the kill.\n",
        "The Vmmem usage is very high, after a while WSL2 killed the python process.\n",
    ],
)
def test_a_host_kill_told_by_its_cause_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_the_card_maxing_out_before_a_kill_is_no_host_kill() -> None:
    text = "[1]    4242 killed     python train.py\nGPU memory is maxing out and then the kill.\n"
    assert classify(text).cls != "host_oom_killed"

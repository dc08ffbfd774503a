"""DryRunMemo: a passed dry-run stands for the same kind of change for 30 s, on the clock
it is given; a kind never passed, or passed too long ago, needs its own."""

from __future__ import annotations

from gpubot.backends.kube.dry_run import DryRunMemo


def test_a_passed_dry_run_stands_for_thirty_seconds_and_only_for_its_kind() -> None:
    now = [1000.0]
    memo = DryRunMemo(now=lambda: now[0])
    assert not memo.passed(True)
    memo.note(True)
    now[0] += 29.9
    assert memo.passed(True)
    assert not memo.passed(False)  # an uncordon proves nothing about a cordon
    now[0] += 0.2
    assert not memo.passed(True)

"""Safety policy: blast-radius caps on cordons and drains, and the per-node attempt cap."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpubot.domain.control.approvals import DEFAULT_EXPIRY
from gpubot.domain.control.safety_caps import (
    AttemptCap,
    BlastRadius,
    Policy,
    check_attempts,
    check_cordon,
    check_drain,
)

DEFAULT = BlastRadius()


def nodes(count: int) -> set[str]:
    return {f"gpu-node-{i:02d}" for i in range(1, count + 1)}


@pytest.mark.parametrize(
    ("fleet", "limit"),
    [(16, 4), (100, 4), (1000, 4), (12, 3), (8, 2), (7, 1), (4, 1), (3, 1), (1, 1), (0, 0)],
)
def test_cordon_limit_is_the_smaller_of_fraction_and_count(fleet: int, limit: int) -> None:
    """Defaults (25%, 4 nodes): the fraction rounds down, but never below one node, and the
    count caps large fleets."""
    assert DEFAULT.cordon_limit(fleet) == limit


def test_cordon_limit_with_custom_policy() -> None:
    """A higher count lets the fraction decide; a lower count wins over the fraction."""
    assert BlastRadius(max_cordoned_fraction=0.5, max_cordoned_count=100).cordon_limit(16) == 8
    assert BlastRadius(max_cordoned_fraction=0.5, max_cordoned_count=2).cordon_limit(16) == 2
    assert BlastRadius(max_cordoned_fraction=0.0).cordon_limit(16) == 0
    assert BlastRadius(max_cordoned_count=0).cordon_limit(16) == 0


@given(
    fleet=st.integers(min_value=0, max_value=10_000),
    percent=st.integers(min_value=0, max_value=100),
    count=st.integers(min_value=0, max_value=1_000),
)
def test_cordon_limit_never_exceeds_either_cap(fleet: int, percent: int, count: int) -> None:
    """Whatever the policy, the limit is within [0, count] and at most the fraction of the fleet."""
    policy = BlastRadius(max_cordoned_fraction=percent / 100, max_cordoned_count=count)
    limit = policy.cordon_limit(fleet)
    assert 0 <= limit <= count
    assert limit <= max(fleet * percent / 100, 1 if percent and fleet else 0)
    # A fleet never has its allowance rounded down to zero while both caps allow some.
    assert (limit == 0) == (count == 0 or percent == 0 or fleet == 0)


def test_cordon_allowed_under_the_cap() -> None:
    """With room under the cap, cordoning a new node is allowed."""
    assert (
        check_cordon(policy=DEFAULT, fleet_size=16, cordoned=nodes(3), node="gpu-node-16") is None
    )


def test_cordon_allowed_for_a_node_already_cordoned() -> None:
    """Re-cordoning a node that is already out of service does not grow the blast radius."""
    cordoned = nodes(4)
    assert (
        check_cordon(policy=DEFAULT, fleet_size=16, cordoned=cordoned, node="gpu-node-04") is None
    )
    # Even well past the cap (someone cordoned nodes by hand).
    assert (
        check_cordon(policy=DEFAULT, fleet_size=16, cordoned=nodes(10), node="gpu-node-07") is None
    )


def test_cordon_held_over_the_cap_names_the_numbers() -> None:
    """The fifth cordon in a 16-node fleet is held, and the reason gives count, fleet and cap."""
    reason = check_cordon(policy=DEFAULT, fleet_size=16, cordoned=nodes(4), node="gpu-node-16")
    assert reason == (
        "blast radius: 4 of 16 GPU nodes are already cordoned; "
        "the cap is 4 (4 nodes or 25% of the fleet)"
    )


def test_cordon_held_by_the_fraction_in_a_small_fleet() -> None:
    """In an 8-node fleet 25% is 2 nodes, which is below the count of 4."""
    reason = check_cordon(policy=DEFAULT, fleet_size=8, cordoned=nodes(2), node="gpu-node-08")
    assert reason is not None
    assert "2 of 8 GPU nodes" in reason
    assert "the cap is 2" in reason
    assert check_cordon(policy=DEFAULT, fleet_size=8, cordoned=nodes(1), node="gpu-node-08") is None


def test_tiny_fleet_may_quarantine_one_node() -> None:
    """With 3 nodes, 25% is 0.75 of a node: the allowance is one node, not zero, so an XID on
    a small fleet is still quarantined; the second cordon is held."""
    assert check_cordon(policy=DEFAULT, fleet_size=3, cordoned=set(), node="gpu-node-01") is None
    reason = check_cordon(policy=DEFAULT, fleet_size=3, cordoned=nodes(1), node="gpu-node-02")
    assert reason is not None
    assert "1 of 3" in reason
    assert "the cap is 1" in reason


@pytest.mark.parametrize(
    ("policy", "says"),
    [
        (BlastRadius(max_cordoned_count=0), "max_cordoned_count is 0"),
        (BlastRadius(max_cordoned_fraction=0.0), "max_cordoned_fraction is 0"),
    ],
)
def test_a_zero_allowance_is_said_in_the_held_reason(policy: BlastRadius, says: str) -> None:
    """A cap configured to allow nothing says so, and names the setting, in the held step."""
    reason = check_cordon(policy=policy, fleet_size=16, cordoned=set(), node="gpu-node-01")
    assert reason is not None
    assert "the cap is 0" in reason
    assert "allows no cordon at all" in reason
    assert says in reason
    assert policy.warnings() == [
        f"the blast-radius cap allows no cordon at all: policy.blast_radius.{says}"
    ]


def test_no_gpu_nodes_is_said_in_the_held_reason() -> None:
    reason = check_cordon(policy=DEFAULT, fleet_size=0, cordoned=set(), node="gpu-node-01")
    assert reason is not None
    assert "the cluster reports no GPU nodes" in reason


def test_default_policy_has_no_start_up_warning() -> None:
    assert DEFAULT.warnings() == []
    assert DEFAULT.zero_allowance() is None


def test_zero_concurrent_drains_is_warned_and_said() -> None:
    policy = BlastRadius(max_concurrent_drains=0)
    assert policy.warnings() == [
        "the blast-radius cap allows no drain at all: "
        "policy.blast_radius.max_concurrent_drains is 0"
    ]
    reason = check_drain(policy=policy, draining=set(), node="gpu-node-07")
    assert reason is not None
    assert "allows no drain at all" in reason


def test_drain_allowed_when_none_in_progress() -> None:
    """The first drain is allowed under the default cap of one."""
    assert check_drain(policy=DEFAULT, draining=set(), node="gpu-node-07") is None


def test_drain_of_a_node_already_draining_is_allowed() -> None:
    """Resuming the drain already counted is not a second drain."""
    assert check_drain(policy=DEFAULT, draining={"gpu-node-07"}, node="gpu-node-07") is None


def test_second_concurrent_drain_is_held_naming_the_others() -> None:
    """Over the concurrency cap, the reason lists the nodes draining (sorted) and the cap."""
    policy = BlastRadius(max_concurrent_drains=2)
    assert check_drain(policy=policy, draining={"gpu-node-03"}, node="gpu-node-07") is None
    reason = check_drain(policy=policy, draining={"gpu-node-09", "gpu-node-03"}, node="gpu-node-07")
    assert reason == (
        "blast radius: 2 drain(s) already in progress (gpu-node-03, gpu-node-09); the cap is 2"
    )


def test_attempts_under_the_cap() -> None:
    """Fewer recent runs than the cap: no hold."""
    cap = AttemptCap()
    assert check_attempts(cap=cap, recent_runs=0, runbook="xid79", node="gpu-node-07") is None
    assert check_attempts(cap=cap, recent_runs=2, runbook="xid79", node="gpu-node-07") is None


@pytest.mark.parametrize("recent", [3, 4, 50])
def test_attempts_at_or_over_the_cap_are_held(recent: int) -> None:
    """At the cap the run is held, and the reason names runbook, node, count, window and cap."""
    reason = check_attempts(
        cap=AttemptCap(), recent_runs=recent, runbook="xid79", node="gpu-node-07"
    )
    assert reason == (
        f"attempt cap: xid79 already ran {recent} times on gpu-node-07 in the last 24 h "
        "(cap 3); a human must look at this node"
    )


def test_attempt_window_is_shown_in_hours() -> None:
    """A 90-minute window reads as 1.5 h."""
    cap = AttemptCap(max_attempts=1, window=timedelta(minutes=90))
    reason = check_attempts(cap=cap, recent_runs=1, runbook="xid79", node="gpu-node-07")
    assert reason is not None
    assert "in the last 1.5 h (cap 1)" in reason


def test_policy_defaults() -> None:
    """Defaults: on-call group, 30-minute approvals, the default caps."""
    policy = Policy()
    assert policy.default_group == "oncall"
    assert policy.approval_expiry == DEFAULT_EXPIRY == timedelta(minutes=30)
    assert policy.blast == BlastRadius(0.25, 4, 1)
    assert policy.attempts == AttemptCap(3, timedelta(hours=24))
    assert dict(policy.groups) == {}


def test_cordon_limit_exact_for_decimal_fractions() -> None:
    """29% of 100 nodes is 29, but 100 * 0.29 == 28.999999999999996 floors to 28."""
    assert BlastRadius(max_cordoned_fraction=0.29, max_cordoned_count=100).cordon_limit(100) == 29

"""Approval rules: who may click, how many clicks it takes, and when a request expires."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest
from freezegun import freeze_time

from gpubot.domain.control.approvals import (
    DEFAULT_EXPIRY,
    ApprovalLevel,
    ApprovalRequest,
    ApprovalStatus,
    ApproverGroup,
    VoteOutcome,
    cast_vote,
    expire_if_due,
    new_approval_id,
)

T0 = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
SOON = T0 + timedelta(minutes=1)
ONCALL = ApproverGroup(
    name="oncall",
    users=frozenset({"U_ALICE", "U_BOB", "U_REQ"}),
    usergroups=frozenset({"S_SRE"}),
)
GROUPS = {"oncall": ONCALL}


def request(level: ApprovalLevel = "required", *, at: datetime = T0) -> ApprovalRequest:
    return ApprovalRequest(
        id=new_approval_id(),
        run_id="run-1",
        step_id="drain",
        level=level,
        group="oncall",
        requested_by="U_REQ",
        created_at=at,
        expires_at=at + DEFAULT_EXPIRY,
    )


def vote(
    req: ApprovalRequest,
    user: str,
    decision: Literal["approve", "deny"] = "approve",
    *,
    now: datetime = SOON,
    user_groups: Collection[str] = (),
) -> VoteOutcome:
    return cast_vote(
        req, user=user, decision=decision, now=now, groups=GROUPS, user_groups=user_groups
    )


def test_required_is_approved_by_one_group_member() -> None:
    """One approve from a member of the step's group approves a `required` request."""
    req = request()
    out = vote(req, "U_ALICE")
    assert out.accepted
    assert out.changed
    assert out.request.status is ApprovalStatus.APPROVED
    assert out.request.approvers == ("U_ALICE",)
    assert out.request.votes[0].at == SOON
    assert out.message == "Approved by <@U_ALICE>."
    assert req.status is ApprovalStatus.PENDING  # the original is untouched (frozen)


def test_requester_may_approve_their_own_required_step() -> None:
    """The four-eyes rule is only for two-person steps."""
    assert vote(request(), "U_REQ").request.status is ApprovalStatus.APPROVED


def test_user_outside_the_group_is_refused_and_nothing_changes() -> None:
    """A click from someone not in the approver group is refused and leaves the request as is."""
    req = request()
    out = vote(req, "U_MALLORY")
    assert not out.accepted
    assert not out.changed
    assert out.request is req
    assert out.message == "You are not in the approver group 'oncall' for this step."


def test_outsider_cannot_deny_either() -> None:
    """Denying is a decision too: outsiders cannot block a step."""
    out = vote(request(), "U_MALLORY", "deny")
    assert not out.accepted
    assert out.request.status is ApprovalStatus.PENDING


def test_unknown_group_admits_nobody() -> None:
    """A request for a group that is not configured cannot be approved by anyone."""
    out = cast_vote(request(), user="U_ALICE", decision="approve", now=SOON, groups={})
    assert not out.accepted
    assert out.request.status is ApprovalStatus.PENDING


def test_user_admitted_through_a_usergroup() -> None:
    """A user not listed by id is admitted when one of their Slack user groups is listed."""
    out = vote(request(), "U_CAROL", user_groups=["S_OTHER", "S_SRE"])
    assert out.accepted
    assert out.request.status is ApprovalStatus.APPROVED
    assert not vote(request(), "U_CAROL", user_groups=["S_OTHER"]).accepted


def test_approver_group_admits() -> None:
    """ApproverGroup.admits: listed user ids or any listed user group."""
    assert ONCALL.admits("U_BOB")
    assert ONCALL.admits("U_ZED", ["S_SRE"])
    assert not ONCALL.admits("U_ZED")
    assert not ONCALL.admits("U_ZED", ["S_OTHER"])
    assert not ApproverGroup(name="empty").admits("U_BOB", ["S_SRE"])


def test_two_person_needs_two_distinct_approvers() -> None:
    """The first approve of a two-person step is recorded but leaves it pending."""
    first = vote(request("two-person"), "U_ALICE")
    assert first.accepted
    assert first.changed
    assert first.request.status is ApprovalStatus.PENDING
    assert "one more approver is needed" in first.message
    second = vote(first.request, "U_BOB")
    assert second.accepted
    assert second.request.status is ApprovalStatus.APPROVED
    assert second.request.approvers == ("U_ALICE", "U_BOB")
    assert second.message == "Approved by <@U_ALICE> and <@U_BOB>."


def test_same_user_twice_is_refused_on_two_person() -> None:
    """One person clicking twice does not count as two approvers."""
    first = vote(request("two-person"), "U_ALICE")
    again = vote(first.request, "U_ALICE")
    assert not again.accepted
    assert not again.changed
    assert again.request is first.request
    assert again.request.status is ApprovalStatus.PENDING
    assert again.message == "You have already voted on this request."


def test_requester_cannot_approve_own_two_person_step() -> None:
    """The person who asked for the run cannot be one of the two approvers."""
    req = request("two-person")
    out = vote(req, "U_REQ")
    assert not out.accepted
    assert out.request is req
    assert "requester" in out.message
    # ...even as the second approver.
    later = vote(vote(req, "U_ALICE").request, "U_REQ")
    assert not later.accepted
    assert later.request.status is ApprovalStatus.PENDING


def test_requester_may_deny_own_two_person_step() -> None:
    """Stopping one's own run is always allowed."""
    out = vote(request("two-person"), "U_REQ", "deny")
    assert out.accepted
    assert out.request.status is ApprovalStatus.DENIED


@pytest.mark.parametrize("level", ["required", "two-person"])
def test_a_deny_ends_it(level: ApprovalLevel) -> None:
    """One deny from a member ends the request; later approves are refused."""
    denied = vote(request(level), "U_ALICE", "deny")
    assert denied.accepted
    assert denied.changed
    assert denied.request.status is ApprovalStatus.DENIED
    assert denied.message == "Denied by <@U_ALICE>."
    late = vote(denied.request, "U_BOB")
    assert not late.accepted
    assert late.request is denied.request
    assert late.message == "This request was already denied."


def test_deny_after_one_approval_of_two_person() -> None:
    """A deny after a first approval of a two-person step still ends it."""
    half = vote(request("two-person"), "U_ALICE")
    out = vote(half.request, "U_BOB", "deny")
    assert out.request.status is ApprovalStatus.DENIED
    assert [v.decision for v in out.request.votes] == ["approve", "deny"]


def test_click_on_approved_request_changes_nothing() -> None:
    """A late click on an approved request is refused and returns the same request."""
    approved = vote(request(), "U_ALICE").request
    clicks: list[tuple[str, Literal["approve", "deny"]]] = [
        ("U_BOB", "approve"),
        ("U_BOB", "deny"),
        ("U_ALICE", "deny"),
    ]
    for user, decision in clicks:
        out = vote(approved, user, decision)
        assert not out.accepted
        assert not out.changed
        assert out.request is approved
        assert out.message == "This request was already approved."


def test_click_after_expiry_returns_expired_request() -> None:
    """A click 30 minutes after the request was made expires it instead of approving."""
    with freeze_time("2026-11-22 02:00:00") as frozen:
        created = datetime.now(UTC)
        req = request(at=created)
        assert req.expires_at == created + timedelta(minutes=30)
        frozen.tick(DEFAULT_EXPIRY + timedelta(seconds=1))
        out = vote(req, "U_ALICE", now=datetime.now(UTC))
    assert not out.accepted
    assert out.changed
    assert out.request.status is ApprovalStatus.EXPIRED
    assert out.request.votes == ()
    assert "expired" in out.message


def test_expiry_boundary() -> None:
    """A click one second before expires_at counts; a click at expires_at does not."""
    with freeze_time("2026-11-22 02:00:00") as frozen:
        req = request(at=datetime.now(UTC))
        frozen.tick(DEFAULT_EXPIRY - timedelta(seconds=1))
        just_in_time = vote(req, "U_ALICE", now=datetime.now(UTC))
        frozen.tick(timedelta(seconds=1))
        too_late = vote(req, "U_ALICE", now=datetime.now(UTC))
    assert just_in_time.request.status is ApprovalStatus.APPROVED
    assert too_late.request.status is ApprovalStatus.EXPIRED


def test_expiry_is_checked_before_membership() -> None:
    """After expiry even an outsider's click reports expiry, so the request gets closed."""
    with freeze_time("2026-11-22 02:00:00") as frozen:
        req = request(at=datetime.now(UTC))
        frozen.tick(timedelta(hours=1))
        out = vote(req, "U_MALLORY", now=datetime.now(UTC))
    assert out.request.status is ApprovalStatus.EXPIRED


def test_expire_if_due() -> None:
    """A pending request past expires_at becomes EXPIRED; before it, or decided, it is kept."""
    with freeze_time("2026-11-22 02:00:00") as frozen:
        req = request(at=datetime.now(UTC))
        frozen.tick(timedelta(minutes=29))
        assert expire_if_due(req, now=datetime.now(UTC)) is req
        frozen.tick(timedelta(minutes=1))
        expired = expire_if_due(req, now=datetime.now(UTC))
        assert expired.status is ApprovalStatus.EXPIRED
        assert expired.id == req.id
        approved = vote(req, "U_ALICE", now=req.created_at).request
        assert expire_if_due(approved, now=datetime.now(UTC)) is approved
        assert expire_if_due(expired, now=datetime.now(UTC)) is expired


def test_a_click_on_an_expired_request_changes_nothing() -> None:
    """Once stored as EXPIRED, clicks are refused with the status in the message."""
    expired = expire_if_due(request(), now=T0 + DEFAULT_EXPIRY)
    out = vote(expired, "U_ALICE", now=T0 + DEFAULT_EXPIRY)
    assert not out.accepted
    assert not out.changed
    assert out.request is expired
    assert out.message == "This request was already expired."


def test_needed_approvals_per_level() -> None:
    """`required` needs one approver and `two-person` two."""
    assert request("required").needed == 1
    assert request("two-person").needed == 2


def test_approval_ids_are_opaque_and_unique() -> None:
    """Button ids are random and carry nothing about the action."""
    ids = {new_approval_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(i.startswith("apr-") and len(i) > 12 for i in ids)

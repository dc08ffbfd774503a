"""Approval requests and the rules that decide whether a click counts."""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Literal

ApprovalLevel = Literal["auto", "required", "two-person"]
DEFAULT_EXPIRY = timedelta(minutes=30)


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"  # the run ended (denied elsewhere, incident resolved, step failed)


@dataclass(frozen=True)
class ApproverGroup:
    """Who may approve: Slack user ids and Slack user-group ids."""

    name: str
    users: frozenset[str] = frozenset()
    usergroups: frozenset[str] = frozenset()

    def admits(self, user: str, user_groups: Collection[str] = ()) -> bool:
        return user in self.users or any(g in self.usergroups for g in user_groups)


@dataclass(frozen=True)
class Vote:
    user: str
    decision: Literal["approve", "deny"]
    at: datetime


def new_approval_id() -> str:
    # Opaque and unguessable: the only thing a button carries.
    return "apr-" + secrets.token_urlsafe(12)


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    run_id: str
    step_id: str
    level: ApprovalLevel
    group: str
    requested_by: str
    created_at: datetime
    expires_at: datetime
    status: ApprovalStatus = ApprovalStatus.PENDING
    votes: tuple[Vote, ...] = ()

    @property
    def needed(self) -> int:
        return 2 if self.level == "two-person" else 1

    @property
    def approvers(self) -> tuple[str, ...]:
        return tuple(v.user for v in self.votes if v.decision == "approve")


@dataclass(frozen=True)
class VoteOutcome:
    """The request after a click, and what to tell the person who clicked."""

    request: ApprovalRequest
    accepted: bool
    message: str
    changed: bool = field(default=False)


def cast_vote(
    request: ApprovalRequest,
    *,
    user: str,
    decision: Literal["approve", "deny"],
    now: datetime,
    groups: Mapping[str, ApproverGroup],
    user_groups: Collection[str] = (),
) -> VoteOutcome:
    """Apply one click to a request. Refusals change nothing and say why in one line."""
    if request.status is not ApprovalStatus.PENDING:
        return VoteOutcome(request, False, f"This request was already {request.status.value}.")
    if now >= request.expires_at:
        expired = replace(request, status=ApprovalStatus.EXPIRED)
        return VoteOutcome(
            expired, False, "This approval request has expired; ask for a new plan.", True
        )
    group = groups.get(request.group)
    if group is None or not group.admits(user, user_groups):
        return VoteOutcome(
            request, False, f"You are not in the approver group '{request.group}' for this step."
        )
    if any(v.user == user for v in request.votes):
        return VoteOutcome(request, False, "You have already voted on this request.")
    if decision == "approve" and request.level == "two-person" and user == request.requested_by:
        return VoteOutcome(
            request, False, "The requester of a run cannot approve its two-person step."
        )
    votes = (*request.votes, Vote(user=user, decision=decision, at=now))
    if decision == "deny":
        denied = replace(request, votes=votes, status=ApprovalStatus.DENIED)
        return VoteOutcome(denied, True, f"Denied by <@{user}>.", True)
    approved = sum(1 for v in votes if v.decision == "approve")
    if approved >= request.needed:
        done = replace(request, votes=votes, status=ApprovalStatus.APPROVED)
        return VoteOutcome(done, True, f"Approved by {_mentions(done.approvers)}.", True)
    partial = replace(request, votes=votes)
    return VoteOutcome(
        partial,
        True,
        f"Approved by <@{user}>; one more approver is needed (two-person rule).",
        True,
    )


def _mentions(users: tuple[str, ...]) -> str:
    return " and ".join(f"<@{u}>" for u in users)


def expire_if_due(request: ApprovalRequest, *, now: datetime) -> ApprovalRequest:
    if request.status is ApprovalStatus.PENDING and now >= request.expires_at:
        return replace(request, status=ApprovalStatus.EXPIRED)
    return request

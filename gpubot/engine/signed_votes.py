"""Counting break-glass votes: the server checks each signed vote against its own operator
keys, once, and only then decides as the identity its config gives that key."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpubot.domain.control.signed_votes import (
    Signer,
    SubmittedVote,
    VoteMessage,
    check_message,
    parse_message,
)
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.deps import Engine
from gpubot.errors import ApprovalError, NotFoundError, SignatureError

if TYPE_CHECKING:
    from gpubot.engine.service import GpubotService

log = logging.getLogger(__name__)
SUBMITTED_KIND = "vote.submitted"  # the CLI stored one: the leader counts it at once
REFUSED_KIND = "vote.refused"  # a signed vote that never reached the approval rules


class NoOperatorKeys:
    """VoteSigners with no key configured: every signed vote is refused."""

    def configured(self) -> bool:
        return False

    def verify(self, *, message: bytes, signature: str) -> Signer:
        raise SignatureError("no operator keys are configured on the server (policy.operator_keys)")


async def submit(
    engine: Engine, trail: AuditTrail, vote: SubmittedVote, message: VoteMessage
) -> None:
    """Store a signed vote for the server to count (the CLI's side: it decides nothing);
    ApprovalError when the same signed vote was stored before (a replay)."""
    if not await engine.store.submit_vote(vote):
        raise ApprovalError(f"this signed vote (nonce {vote.nonce}) was submitted before")
    await trail.record(
        SUBMITTED_KIND,
        actor="cli",
        run_id=message.run,
        step=message.step or None,
        result={"action": vote.action, "nonce": vote.nonce, "account": vote.account},
        reason=f"{vote.action} {vote.target}",
    )


class VoteCounter:
    """The server's side: every pending signed vote, verified and counted exactly once."""

    def __init__(self, service: GpubotService) -> None:
        self.service = service
        self.e: Engine = service.e

    async def count_pending(self) -> int:
        """Count what the CLI stored; returns how many this process counted."""
        counted = 0
        for vote in await self.e.store.pending_votes():
            if not await self.e.store.claim_vote(vote.digest):
                continue  # another replica counts it
            accepted, verdict = await self._count(vote)
            await self.e.store.settle_vote(
                vote.digest, accepted=accepted, verdict=verdict, at=self.e.clock.now()
            )
            counted += 1
        return counted

    async def _count(self, vote: SubmittedVote) -> tuple[bool, str]:
        try:
            signers = self.e.signers or NoOperatorKeys()
            signer = signers.verify(message=vote.message, signature=vote.signature)
        except SignatureError as exc:
            await self._refuse(vote, actor="unknown", key=exc.key, why=str(exc))
            return False, str(exc)
        try:
            message = parse_message(vote.message)
            check_message(message, stored=vote, now=self.e.clock.now())
            if message.user != signer.user:
                raise ApprovalError(
                    f"the vote claims to be {message.user}, but key {signer.key} is {signer.user}"
                )
            await self._check_target(message)
            if not await self.e.store.mark_verified(vote.digest, signer=signer.key):
                raise ApprovalError(f"this signed vote (nonce {vote.nonce}) was used before")
        except ApprovalError as exc:
            await self._refuse(vote, actor=signer.user, key=signer.key, why=str(exc))
            return False, str(exc)
        via = {"via": "cli", "account": vote.account, "key": signer.key, "nonce": vote.nonce}
        try:
            return True, await self._decide(message, signer, via)
        except (ApprovalError, NotFoundError) as exc:
            # The service recorded its own refusal (approval.refused, run.refused) with `via`.
            return False, str(exc)

    async def _decide(self, message: VoteMessage, signer: Signer, via: Mapping[str, str]) -> str:
        service = self.service
        groups: Sequence[str] = signer.usergroups
        if message.action in ("approve", "deny"):
            outcome = await service.vote(
                approval_id=message.target,
                user=signer.user,
                decision=message.action,
                user_groups=groups,
                via=via,
                reason=message.reason,
            )
            return outcome.message
        act: Callable[..., Awaitable[Any]] = (
            service.cancel if message.action == "cancel" else service.resume
        )
        extra = {"reason": message.reason} if message.action == "cancel" else {}
        result = await act(
            run_id=message.run, user=signer.user, user_groups=groups, via=via, **extra
        )
        return str(result.message)

    async def _check_target(self, message: VoteMessage) -> None:
        """The signed run and step are the ones the approval is for (a vote signed for one
        step is not a vote for another); a missing request is the service's to refuse."""
        if message.action not in ("approve", "deny"):
            if message.target != message.run:
                raise ApprovalError("a cancel or resume vote names its run as its target")
            return
        try:
            request = await self.e.store.get_approval(message.target)
        except NotFoundError:
            return
        if (request.run_id, request.step_id) != (message.run, message.step):
            raise ApprovalError(
                f"the vote is signed for run {message.run} step {message.step}, but "
                f"{request.id} is for run {request.run_id} step {request.step_id}"
            )

    async def _refuse(self, vote: SubmittedVote, *, actor: str, key: str, why: str) -> None:
        log.warning(
            "signed vote refused: %s",
            why,
            extra={"event": REFUSED_KIND, "nonce": vote.nonce, "key": key},
        )
        await self.service.trail.record(
            REFUSED_KIND,
            actor=actor,
            result={
                "action": vote.action,
                "accepted": False,
                "message": why,
                "key": key,
                "nonce": vote.nonce,
                "account": vote.account,
                "via": "cli",
            },
            reason=f"{vote.action} {vote.target}",
        )

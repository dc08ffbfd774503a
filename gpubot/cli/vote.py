"""Break-glass decisions as signed votes: sign (or take a signed) vote, store it, and show
the verdict of the running server, which alone checks the signature and counts it."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubot.errors import ApprovalError, InputError

if TYPE_CHECKING:
    from gpubot.config import Settings
    from gpubot.domain.control.signed_votes import Action, VoteMessage
    from gpubot.wiring import App

_PICKED_UP = "the running gpubot acts on it within about a second"
_MAX_REASON = 500  # the signed message stays under its 4 KiB cap, escapes and all


async def decide(app: App, args: argparse.Namespace, account: str) -> int:
    """Sign (or take a signed) vote, store it, and wait for the server's verdict."""
    from gpubot.domain.control.signed_votes import SubmittedVote

    action: Action = args.command
    target, run_id, step = await _target(app, action, args)
    message, signature = await _signed(app, args, action, target=target, run=run_id, step=step)
    if signature is None:
        return 0  # --write-message: nothing stored
    raw = message.canonical()
    vote = SubmittedVote(
        nonce=message.nonce,
        action=action,
        target=target,
        message=raw,
        signature=signature,
        account=account,
        submitted_at=app.service.read.now(),
    )
    await app.service.submit_signed_vote(vote, message)
    return await _verdict(app, vote, message, wait=args.wait)


async def _target(app: App, action: Action, args: argparse.Namespace) -> tuple[str, str, str]:
    """What the vote is on: (approval id, its run, its step), or (run, run, "")."""
    if action in ("approve", "deny"):
        approval_id = await _approval_id(app, args.id)
        request = await app.store.get_approval(approval_id)  # NotFoundError: exit 2
        return approval_id, request.run_id, request.step_id
    await app.store.get_run(args.run)
    return args.run, args.run, ""


async def _signed(
    app: App, args: argparse.Namespace, action: Action, *, target: str, run: str, step: str
) -> tuple[VoteMessage, str | None]:
    """The vote and its signature: signed here with the operator's key, or as signed
    elsewhere (--message, --signature); with --write-message, the vote alone (None)."""
    from gpubot.cli.sign import find_key, public_line, sign
    from gpubot.domain.control.signed_votes import MAX_SIGNATURE_BYTES, new_message, parse_message

    if args.message is not None or args.signature is not None:
        if args.message is None or args.signature is None:
            raise InputError("--message and --signature go together")
        message = parse_message(_read(args.message, binary=True))
        if (message.action, message.target) != (action, target):
            raise ApprovalError(
                f"{args.message} is a vote to {message.action} {message.target}, "
                f"not to {action} {target}"
            )
        signature = _read(args.signature, binary=False)
        if len(signature) > MAX_SIGNATURE_BYTES:
            raise InputError(
                f"{args.signature}: over {MAX_SIGNATURE_BYTES} bytes: no SSH signature"
            )
        return message, signature
    reason = getattr(args, "reason", "")
    if len(reason) > _MAX_REASON:
        raise InputError(f"--reason is over {_MAX_REASON} characters")
    key = find_key(args.key)
    user = _operator(app.settings, public_line(key))
    message = new_message(
        action=action,
        target=target,
        run=run,
        step=step,
        user=user,
        now=app.service.read.now(),
        reason=reason,
    )
    if args.write_message is not None:
        try:
            args.write_message.write_bytes(message.canonical())
        except OSError as exc:
            raise InputError(f"{args.write_message}: cannot write: {exc.strerror}") from None
        print(
            f"wrote the vote to {args.write_message} (valid until "
            f"{message.expires:%H:%M:%S} UTC); sign it with: ssh-keygen -Y sign -f KEY "
            f"-n gpubot-vote {args.write_message}, then: gpubot {action} {_given(args)} "
            f"--message {args.write_message} --signature {args.write_message}.sig"
        )
        return message, None
    return message, sign(key, message.canonical())


def _operator(settings: Settings, public: str) -> str:
    """The identity this config lists for the key: what the vote claims. The server checks
    the claim against its own config; this lookup only refuses early."""
    from gpubot.backends.sshsig import public_key_fingerprint

    try:
        key = public_key_fingerprint(public)
    except ValueError as exc:
        raise InputError(f"your public key: {exc}") from None
    if not settings.policy.operator_keys:
        raise ApprovalError(
            "unsigned votes are not taken and this config lists no policy.operator_keys: "
            "use the config `gpubot serve` runs with, where your key is listed"
        )
    for entry in settings.policy.operator_keys:
        if entry.fingerprint() == key:
            return entry.user
    raise ApprovalError(f"key {key} is not in policy.operator_keys of this config")


async def _verdict(app: App, vote: Any, message: VoteMessage, *, wait: float) -> int:
    """The server's verdict on the stored vote, as soon as it has counted it."""
    from gpubot.cli.ops_view import plain

    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, wait)
    while True:
        stored = await app.store.get_vote(vote.digest)
        if stored is not None and stored.state == "accepted":
            print(f"{plain(stored.verdict)} ({vote.target}, as {message.user}); {_PICKED_UP}")
            return 0
        if stored is not None and stored.state == "refused":
            raise ApprovalError(stored.verdict)
        if loop.time() >= deadline:
            break
        await asyncio.sleep(0.2)
    print(
        f"stored the signed vote to {vote.action} {vote.target} as {message.user} "
        f"(nonce {vote.nonce}); no running gpubot has counted it yet: it is counted when "
        f"one does, until {message.expires:%Y-%m-%d %H:%M:%S} UTC"
    )
    return 0


def _given(args: argparse.Namespace) -> str:
    return str(getattr(args, "id", None) or getattr(args, "run", ""))


def _read(path: Path, *, binary: bool) -> Any:
    try:
        return path.read_bytes() if binary else path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None


async def _approval_id(app: App, given: str) -> str:
    """An approval id as given, or a run's pending request (the newest) for a run id."""
    if not given.startswith("run-"):
        return given
    from gpubot.domain.control.approvals import ApprovalStatus

    await app.store.get_run(given)  # NotFoundError (exit 2) for a wrong id
    pending = [
        a for a in await app.store.approvals_for(given) if a.status is ApprovalStatus.PENDING
    ]
    if not pending:
        raise ApprovalError(f"run {given} has no pending approval request")
    return pending[-1].id

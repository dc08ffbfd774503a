"""Break-glass decisions signed with an operator's SSH key: the message and its rules."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args

from gpubot.errors import ApprovalError

# The SSHSIG namespace: `ssh-keygen -Y sign -n gpubot-vote`. A signature made for anything
# else (git commits, files) is never a vote, even with the same key.
NAMESPACE = "gpubot-vote"
VERSION = 1
# How long a signed vote may be counted: long enough to sign on one machine and submit on
# another, short enough that a copy found later is worthless.
DEFAULT_LIFETIME = timedelta(minutes=5)
MAX_LIFETIME = timedelta(minutes=15)
MAX_MESSAGE_BYTES = 4096
MAX_SIGNATURE_BYTES = 8192

Action = Literal["approve", "deny", "cancel", "resume"]
ACTIONS: tuple[Action, ...] = get_args(Action)
KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
)
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,80}", re.ASCII)
_NONCE = re.compile(r"[0-9a-f]{32}", re.ASCII)
_FIELDS = {"v", "ns", "action", "target", "run", "step", "user", "nonce", "expires", "reason"}


@dataclass(frozen=True)
class Signer:
    """Who a configured key stands for: its fingerprint, the approver and their groups."""

    key: str  # SHA256:… as `ssh-keygen -l` prints it
    user: str
    usergroups: tuple[str, ...] = ()


@dataclass(frozen=True)
class VoteMessage:
    """What an operator signs: one decision on one request (or run), once, until `expires`."""

    action: Action
    target: str  # the approval id (approve, deny) or the run id (cancel, resume)
    run: str
    step: str  # the step the approval is for; "" for cancel and resume
    user: str  # the approver identity the signer claims to be
    nonce: str
    expires: datetime
    reason: str = ""

    def canonical(self) -> bytes:
        """The exact bytes signed: sorted compact JSON, ASCII only, UTC to the second."""
        body = {
            "v": VERSION,
            "ns": NAMESPACE,
            "action": self.action,
            "target": self.target,
            "run": self.run,
            "step": self.step,
            "user": self.user,
            "nonce": self.nonce,
            "expires": _instant(self.expires),
            "reason": self.reason,
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


@dataclass(frozen=True)
class SubmittedVote:
    """A signed vote as the CLI stored it, before (or after) the server counted it."""

    nonce: str
    action: Action
    target: str
    message: bytes
    signature: str  # ASCII-armored SSHSIG
    account: str  # the OS account that submitted it: a note, not an identity
    submitted_at: datetime
    state: Literal["pending", "counting", "accepted", "refused"] = "pending"
    verdict: str = ""
    signer: str = ""  # the key's fingerprint, once the server verified the signature

    @property
    def digest(self) -> str:
        """What one stored vote is keyed by: the message and signature together, so a
        forged row carrying someone's nonce cannot take the place of their real vote."""
        both = self.message + b"\n" + self.signature.encode("ascii", "replace")
        return hashlib.sha256(both).hexdigest()


def new_nonce() -> str:
    return secrets.token_hex(16)


def new_message(
    *, action: Action, target: str, run: str, step: str, user: str, now: datetime, reason: str = ""
) -> VoteMessage:
    expires = (now + DEFAULT_LIFETIME).astimezone(UTC).replace(microsecond=0)
    return VoteMessage(
        action=action,
        target=target,
        run=run,
        step=step,
        user=user,
        nonce=new_nonce(),
        expires=expires,
        reason=reason,
    )


def parse_message(raw: bytes) -> VoteMessage:
    """The message as signed; ApprovalError with one line for anything but the canonical form
    (so two byte strings never read as one vote, and nothing unsigned rides along)."""
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ApprovalError(f"the vote message is over {MAX_MESSAGE_BYTES} bytes")
    try:
        body = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ApprovalError("the vote message is not gpubot's JSON") from None
    if not isinstance(body, dict) or set(body) != _FIELDS:
        raise ApprovalError("the vote message does not have gpubot's fields")
    if body["v"] != VERSION or body["ns"] != NAMESPACE:
        raise ApprovalError(f"the vote message is not a {NAMESPACE} v{VERSION} vote")
    strings = {k: v for k, v in body.items() if k not in ("v",)}
    if not all(isinstance(v, str) for v in strings.values()):
        raise ApprovalError("the vote message has a field that is not text")
    if body["action"] not in ACTIONS:
        raise ApprovalError(f"the vote message's action {body['action']!r} is not one of gpubot's")
    for name in ("target", "run", "user"):
        if not _ID.fullmatch(body[name]):
            raise ApprovalError(f"the vote message's {name} is not an id")
    if body["step"] and not _ID.fullmatch(body["step"]):
        raise ApprovalError("the vote message's step is not an id")
    if not _NONCE.fullmatch(body["nonce"]):
        raise ApprovalError("the vote message's nonce is not 32 hex digits")
    try:
        expires = datetime.strptime(body["expires"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise ApprovalError("the vote message's expiry is not YYYY-MM-DDTHH:MM:SSZ") from None
    message = VoteMessage(
        action=body["action"],
        target=body["target"],
        run=body["run"],
        step=body["step"],
        user=body["user"],
        nonce=body["nonce"],
        expires=expires,
        reason=body["reason"],
    )
    if message.canonical() != raw:
        raise ApprovalError("the vote message is not in canonical form")
    return message


def check_message(message: VoteMessage, *, stored: SubmittedVote, now: datetime) -> None:
    """The rules a server applies to a verified message before it counts: it is the one the
    row says (no swapping a signed message under another nonce or target) and it is fresh."""
    if (message.nonce, message.action, message.target) != (
        stored.nonce,
        stored.action,
        stored.target,
    ):
        raise ApprovalError("the signed message is not the vote it was stored as")
    if now >= message.expires:
        raise ApprovalError(f"the signed vote expired at {_instant(message.expires)}; sign anew")
    if message.expires - now > MAX_LIFETIME:
        raise ApprovalError(
            f"the signed vote is valid for over {int(MAX_LIFETIME.total_seconds() // 60)} "
            "minutes; sign one that expires sooner"
        )


def key_blob(line: str) -> tuple[str, bytes]:
    """An OpenSSH public key line (`ssh-ed25519 AAAA… comment`) as its type and wire blob;
    ValueError with one line when it is not one of the key types gpubot checks."""
    parts = line.strip().split()
    if len(parts) < 2:
        raise ValueError("an OpenSSH public key is `TYPE BASE64 [comment]`")
    kind, data = parts[0], parts[1]
    if kind not in KEY_TYPES:
        raise ValueError(f"key type {kind[:40]!r} is not one of {', '.join(KEY_TYPES)}")
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key's second field is not base64") from None
    if blob[:4] != len(kind).to_bytes(4, "big") or blob[4 : 4 + len(kind)] != kind.encode():
        raise ValueError(f"the key's data is not a {kind} key")
    return kind, blob


def fingerprint(blob: bytes) -> str:
    """OpenSSH's SHA256 fingerprint of a key's wire blob (`ssh-keygen -l -E sha256`)."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def _instant(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

"""Audit events and the hash chain that makes the trail tamper-evident."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

GENESIS_HASH = "0" * 64
SYSTEM_ACTOR = "system"


@dataclass(frozen=True)
class AuditDraft:
    """What happened, before it is placed in the chain."""

    ts: datetime
    actor: str  # Slack user id, "system", "alertmanager", "simulated-approver", ...
    kind: str  # e.g. incident.opened, step.started, step.finished, approval.vote
    incident_id: str | None = None
    run_id: str | None = None
    step: str | None = None
    action: str | None = None
    target: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    result: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""  # why: alert fingerprint, runbook step, approval id
    dry_run: bool = False


@dataclass(frozen=True)
class AuditEvent(AuditDraft):
    seq: int = 0
    prev_hash: str = GENESIS_HASH
    hash: str = ""

    def as_json(self) -> dict[str, Any]:
        """The export shape (JSON lines): every field, timestamps in ISO 8601."""
        return {
            "seq": self.seq,
            "ts": self.ts.isoformat(),
            "actor": self.actor,
            "kind": self.kind,
            "incident_id": self.incident_id,
            "run_id": self.run_id,
            "step": self.step,
            "action": self.action,
            "target": self.target,
            "args": dict(self.args),
            "result": dict(self.result),
            "reason": self.reason,
            "dry_run": self.dry_run,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


def canonical(draft: AuditDraft, *, seq: int, prev_hash: str) -> bytes:
    body = {
        "seq": seq,
        "ts": draft.ts.isoformat(),
        "actor": draft.actor,
        "kind": draft.kind,
        "incident_id": draft.incident_id,
        "run_id": draft.run_id,
        "step": draft.step,
        "action": draft.action,
        "target": draft.target,
        "args": dict(draft.args),
        "result": dict(draft.result),
        "reason": draft.reason,
        "dry_run": draft.dry_run,
        "prev_hash": prev_hash,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()


def chain_hash(draft: AuditDraft, *, seq: int, prev_hash: str, key: bytes | None = None) -> str:
    """SHA-256 of the canonical event; HMAC-SHA-256 when an audit key is configured."""
    data = canonical(draft, seq=seq, prev_hash=prev_hash)
    if key:
        return hmac.new(key, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class ChainProblem:
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"row seq={self.seq}: {self.problem}"


def verify_chain(
    events: Iterable[AuditEvent],
    *,
    key: bytes | None = None,
    head: tuple[int, str] | None = None,
) -> list[ChainProblem]:
    """Check every link; `head` is the (seq, hash) the store recorded for the last event."""
    problems: list[ChainProblem] = []
    expected_seq, prev = 1, GENESIS_HASH
    last_seq = 0
    for event in events:
        if event.seq != expected_seq:
            if event.seq > expected_seq:
                missing = (
                    f"{expected_seq}"
                    if event.seq == expected_seq + 1
                    else (f"{expected_seq}..{event.seq - 1}")
                )
                problems.append(ChainProblem(event.seq, f"row(s) {missing} deleted before it"))
            else:
                problems.append(ChainProblem(event.seq, "out of order or inserted"))
        if event.prev_hash != prev:
            problems.append(ChainProblem(event.seq, "prev_hash does not match the previous row"))
        recomputed = chain_hash(event, seq=event.seq, prev_hash=event.prev_hash, key=key)
        if not hmac.compare_digest(recomputed, event.hash):
            problems.append(ChainProblem(event.seq, "contents were changed after it was written"))
        expected_seq, prev, last_seq = event.seq + 1, event.hash, event.seq
    if head is not None and head != (last_seq, prev if last_seq else GENESIS_HASH):
        problems.append(
            ChainProblem(head[0], f"the last row(s) were deleted (chain head says seq {head[0]})")
        )
    return problems

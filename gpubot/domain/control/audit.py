"""Audit events and the hash chain that makes the trail tamper-evident."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gpubot.errors import GpubotError

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


class AuditTrailError(GpubotError):
    """The trail cannot take another event as it stands (its head is missing, unsealed or
    behind the events): appending would hide what happened, so the append is refused."""


class AuditKeyError(AuditTrailError):
    """This process's audit key is not the one the chain is sealed with: an append would
    split the chain (events no one process can verify), so nothing is written."""


@dataclass(frozen=True)
class ChainHead:
    """The store's head row: the newest event's seq and hash, and their seal."""

    seq: int
    hash: str
    # HMAC-SHA-256 of seq and hash under the audit key; "" when no key is set. Without the
    # key, moving the head back (to hide a cut tail) cannot be sealed again. None: the
    # database predates seals and was opened read-only, so nothing has sealed it yet.
    seal: str | None = ""
    # Which key the chain is sealed with (key_id), never the key: "" for no key.
    key_id: str = ""

    def __str__(self) -> str:
        return f"seq {self.seq} / hash {self.hash[:SHORT_HASH]}"


# The thread and the log show this many hex digits of a head's hash (48 bits): enough for
# `gpubot audit verify --expect-head` to find exactly one event.
SHORT_HASH = 12


def anchor_line(head: ChainHead | None) -> str:
    """The head as a log line: an anchor outside the database (full hash, for grep)."""
    if head is None:
        return "audit chain head missing (see `gpubot audit verify`)"
    return f"audit chain head seq {head.seq} hash {head.hash}"


def seal_head(seq: int, hash_: str, *, key: bytes | None) -> str:
    """The head row's seal: "" without a key."""
    if not key:
        return ""
    return hmac.new(key, f"gpubot-audit-head:{seq}:{hash_}".encode(), hashlib.sha256).hexdigest()


def key_id(key: bytes | None) -> str:
    """Names an audit key without revealing it (an HMAC of a fixed label under the key, 64
    bits): "" for no key. Stored in the head, so every appender can tell it holds the key
    the chain is sealed with before it writes."""
    if not key:
        return ""
    return hmac.new(key, b"gpubot-audit-key-id", hashlib.sha256).hexdigest()[:16]


def key_mismatch(head: ChainHead, *, key: bytes | None) -> str | None:
    """One line when `key` is not the key the chain's head was sealed with; else None."""
    mine = key_id(key)
    if head.key_id == mine:
        return None
    chain = f"key id {head.key_id}" if head.key_id else "no key"
    held = f"key id {mine}" if mine else "no GPUBOT_AUDIT_KEY"
    return (
        f"the audit chain is sealed with {chain} but this process has {held}: refusing to "
        "write; give every gpubot process the same GPUBOT_AUDIT_KEY (a new key is adopted "
        "only by `gpubot audit reseal`, recorded)"
    )


def head_is_sealed(head: ChainHead, *, key: bytes | None) -> bool:
    """Whether the head was written by someone holding `key` (always true without one)."""
    if not key:
        return True
    return head.seal is not None and hmac.compare_digest(
        head.seal, seal_head(head.seq, head.hash, key=key)
    )


@dataclass(frozen=True)
class Anchor:
    """A head recorded outside the database (the incident thread, the log): the chain must
    still hold an event with that hash, and reach at least that seq."""

    hash_prefix: str | None = None  # lowercase hex, SHORT_HASH digits or more
    min_seq: int | None = None


@dataclass(frozen=True)
class ChainProblem:
    seq: int | None  # the row it concerns; None for the head and anchors
    problem: str

    def __str__(self) -> str:
        return self.problem if self.seq is None else f"row seq={self.seq}: {self.problem}"


def verify_chain(
    events: Iterable[AuditEvent],
    *,
    key: bytes | None = None,
    head: tuple[int, str] | None = None,
) -> list[ChainProblem]:
    """Check every link; `head` is the (seq, hash) the store recorded for the last event."""
    walk = _walk(events, key=key, prefix=None)
    if head is not None:
        walk.problems += head_problems(ChainHead(*head), last=walk.last, count=walk.count)
    return walk.problems


def verify_trail(
    events: Iterable[AuditEvent],
    *,
    head: ChainHead | None,
    key: bytes | None = None,
    anchor: Anchor | None = None,
) -> list[ChainProblem]:
    """What `gpubot audit verify` reports: every link; the head row (None: it is missing),
    which must name the last event and, with `key`, carry its seal; and the anchor."""
    walk = _walk(events, key=key, prefix=anchor.hash_prefix if anchor else None)
    walk.problems += head_problems(head, last=walk.last, count=walk.count)
    if head is not None and not head_is_sealed(head, key=key):
        why = (
            "the database predates head seals; `gpubot serve` seals it once"
            if head.seal is None
            else "it was moved or rewritten without the key"
        )
        walk.problems.append(
            ChainProblem(None, f"head is not authenticated by GPUBOT_AUDIT_KEY ({head}): {why}")
        )
    if anchor is not None:
        walk.problems += anchor_problems(anchor, last_seq=walk.last.seq, anchored=walk.anchored)
    return walk.problems


@dataclass
class _Walk:
    problems: list[ChainProblem]
    count: int
    last: ChainHead  # seq 0 and genesis when there are no events
    anchored: bool  # an event's hash starts with the anchor's prefix


def _walk(events: Iterable[AuditEvent], *, key: bytes | None, prefix: str | None) -> _Walk:
    problems: list[ChainProblem] = []
    expected_seq, prev = 1, GENESIS_HASH
    count, last_seq, anchored = 0, 0, False
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
        anchored = anchored or (prefix is not None and event.hash.startswith(prefix))
        expected_seq, prev, last_seq = event.seq + 1, event.hash, event.seq
        count += 1
    return _Walk(problems, count, ChainHead(last_seq, prev), anchored)


def head_problems(head: ChainHead | None, *, last: ChainHead, count: int) -> list[ChainProblem]:
    """Whether the head row names the last event (`last`; seq 0 and genesis when empty)."""
    if head is None:
        what = (
            f"chain head missing while {count} events exist"
            if count
            else "chain head missing and the table is empty: the trail was emptied"
        )
        return [ChainProblem(None, f"{what} (the audit_head row was deleted)")]
    if (head.seq, head.hash) == (last.seq, last.hash):
        return []
    if count == 0:
        why = f"table empty but head says {head}: every event was deleted"
    elif head.seq > last.seq:
        why = f"head says {head}, last event is seq {last.seq}: events cut from the end"
    elif head.seq < last.seq:
        why = f"head says {head}, last event is seq {last.seq}: the head was moved back"
    else:
        why = (
            f"head says {head}, but event {last.seq} has hash {last.hash[:SHORT_HASH]}: "
            "the head or the last event was rewritten"
        )
    return [ChainProblem(None, why)]


def anchor_problems(anchor: Anchor, *, last_seq: int, anchored: bool) -> list[ChainProblem]:
    """Whether the chain still reaches a head that was recorded outside the database."""
    problems: list[ChainProblem] = []
    if anchor.min_seq is not None and last_seq < anchor.min_seq:
        problems.append(
            ChainProblem(
                None,
                f"chain ends at seq {last_seq}, but seq {anchor.min_seq} was written "
                "(--min-seq): events cut from the end",
            )
        )
    if anchor.hash_prefix is not None and not anchored:
        problems.append(
            ChainProblem(
                None,
                f"no event has hash {anchor.hash_prefix} (--expect-head): "
                "the events up to it were cut or rewritten",
            )
        )
    return problems

"""The chain head: it must exist, name the last event, carry the key's seal, and reach the
anchors recorded outside the database. One line per problem, saying what is wrong."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_audit import KEY, chain

from gpubot.domain.control.audit import (
    GENESIS_HASH,
    Anchor,
    AuditEvent,
    ChainHead,
    anchor_line,
    head_is_sealed,
    seal_head,
    verify_trail,
)
from gpubot.domain.messages import audit_summary


def sealed(event: AuditEvent | None, key: bytes | None = KEY) -> ChainHead:
    seq, digest = (event.seq, event.hash) if event else (0, GENESIS_HASH)
    return ChainHead(seq, digest, seal_head(seq, digest, key=key))


def trail(events: list[AuditEvent], head: ChainHead | None, **kw: object) -> list[str]:
    return [str(p) for p in verify_trail(events, head=head, **kw)]  # type: ignore[arg-type]


def test_intact_trail_is_clean_with_and_without_a_key() -> None:
    events = chain(5, key=KEY)
    assert trail(events, sealed(events[-1]), key=KEY) == []
    plain = chain(5)
    assert trail(plain, sealed(plain[-1], key=None)) == []
    assert trail([], sealed(None), key=KEY) == []


def test_seal_binds_seq_hash_and_key() -> None:
    assert seal_head(3, "a" * 64, key=None) == ""
    seal = seal_head(3, "a" * 64, key=KEY)
    assert len(seal) == 64
    assert seal != seal_head(2, "a" * 64, key=KEY)
    assert seal != seal_head(3, "b" * 64, key=KEY)
    assert seal != seal_head(3, "a" * 64, key=b"other")
    assert head_is_sealed(ChainHead(3, "a" * 64, seal), key=KEY)
    assert not head_is_sealed(ChainHead(3, "a" * 64, ""), key=KEY)
    assert not head_is_sealed(ChainHead(3, "a" * 64, None), key=KEY)
    assert head_is_sealed(ChainHead(3, "a" * 64, "anything"), key=None)


def test_missing_head() -> None:
    events = chain(12)
    assert trail(events, None) == [
        "chain head missing while 12 events exist (the audit_head row was deleted)"
    ]
    assert trail([], None) == [
        "chain head missing and the table is empty: the trail was emptied "
        "(the audit_head row was deleted)"
    ]


def test_head_ahead_of_the_events_is_a_cut_tail() -> None:
    events = chain(40)
    head = sealed(events[-1], key=None)
    assert trail(events[:37], head) == [
        f"head says seq 40 / hash {head.hash[:12]}, last event is seq 37: events cut from the end"
    ]
    assert trail([], head) == [
        f"table empty but head says seq 40 / hash {head.hash[:12]}: every event was deleted"
    ]


def test_head_behind_the_events_or_with_another_hash() -> None:
    events = chain(5)
    behind = sealed(events[2], key=None)
    assert trail(events, behind) == [
        f"head says seq 3 / hash {behind.hash[:12]}, last event is seq 5: the head was moved back"
    ]
    other = ChainHead(5, "f" * 64)
    assert trail(events, other) == [
        f"head says seq 5 / hash ffffffffffff, but event 5 has hash {events[4].hash[:12]}: "
        "the head or the last event was rewritten"
    ]


def test_head_moved_back_without_the_key_is_not_sealed() -> None:
    """Cut to seq 9 and point the head there: consistent, but the seal is the old one."""
    events = chain(12, key=KEY)
    old = sealed(events[-1])
    moved = ChainHead(9, events[8].hash, old.seal)
    assert trail(events[:9], moved, key=KEY) == [
        f"head is not authenticated by GPUBOT_AUDIT_KEY (seq 9 / hash {events[8].hash[:12]}): "
        "it was moved or rewritten without the key"
    ]
    # Without the key the same cut is consistent: only an anchor can tell (below).
    assert trail(events[:9], replace(moved, seal=""), key=None) != []  # hashes are keyed
    plain = chain(12)
    assert trail(plain[:9], sealed(plain[8], key=None)) == []


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        (Anchor(min_seq=12), ["chain ends at seq 9, but seq 12 was written (--min-seq)"]),
        (Anchor(min_seq=9), []),
        (Anchor(hash_prefix="PREFIX12"), ["no event has hash {p12} (--expect-head)"]),
        (Anchor(hash_prefix="PREFIX9"), []),
    ],
)
def test_anchors(anchor: Anchor, expected: list[str]) -> None:
    events = chain(12)
    prefixes = {"PREFIX12": events[11].hash[:12], "PREFIX9": events[8].hash[:16]}
    if anchor.hash_prefix:
        anchor = replace(anchor, hash_prefix=prefixes[anchor.hash_prefix])
    cut = events[:9]
    found = trail(cut, sealed(cut[-1], key=None), anchor=anchor)
    assert [line.split(": ")[0] for line in found] == [
        e.format(p12=prefixes["PREFIX12"]) for e in expected
    ]


def test_anchor_line_and_thread_summary_show_the_head() -> None:
    events = chain(3)
    head = ChainHead(40, events[-1].hash)
    assert anchor_line(head) == f"audit chain head seq 40 hash {events[-1].hash}"
    assert anchor_line(None) == "audit chain head missing (see `gpubot audit verify`)"
    message = audit_summary(events, head=head)
    assert message.title == f"Audit trail (3 events, chain head seq 40 / {events[-1].hash[:12]})"
    assert f"gpubot audit verify --min-seq 40 --expect-head {events[-1].hash[:12]}" in (
        message.plain()
    )
    assert audit_summary(events).title.startswith("Audit trail (3 events, chain head ")

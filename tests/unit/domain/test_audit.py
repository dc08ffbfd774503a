"""The audit hash chain: every edit, deletion, reordering and insertion is detected."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpubot.domain.control.audit import (
    GENESIS_HASH,
    AuditDraft,
    AuditEvent,
    ChainProblem,
    chain_hash,
    verify_chain,
)

T0 = datetime(2026, 11, 22, 2, 0, tzinfo=UTC)
KEY = b"audit-key-for-tests"
KINDS = ["incident.opened", "step.started", "step.finished", "approval.vote", "step.started"]


def draft(i: int) -> AuditDraft:
    return AuditDraft(
        ts=T0 + timedelta(seconds=i),
        actor="system" if i % 2 else "U_ALICE",
        kind=KINDS[i % len(KINDS)],
        incident_id="inc-0123456789",
        run_id="run-1",
        step="cordon",
        action="node.cordon",
        target="gpu-node-07",
        args={"node": "gpu-node-07"},
        result={"ok": True, "n": i},
        reason=f"alert 7c0a5e21f4b3d9a1 #{i}",
    )


def chain(n: int, *, key: bytes | None = None) -> list[AuditEvent]:
    """n events, seq 1..n, each linked to the previous one's hash, as the store writes them."""
    events: list[AuditEvent] = []
    prev = GENESIS_HASH
    for seq in range(1, n + 1):
        d = draft(seq)
        event = AuditEvent(
            **vars(d), seq=seq, prev_hash=prev, hash=chain_hash(d, seq=seq, prev_hash=prev, key=key)
        )
        events.append(event)
        prev = event.hash
    return events


def problems(
    events: list[AuditEvent], *, key: bytes | None = None, head: tuple[int, str] | None = None
) -> list[tuple[int | None, str]]:
    return [(p.seq, p.problem) for p in verify_chain(events, key=key, head=head)]


def head(events: list[AuditEvent]) -> tuple[int, str]:
    return (events[-1].seq, events[-1].hash)


def test_built_chain_links() -> None:
    """The helper builds what the store would: seq 1..n, genesis first, each prev = last hash."""
    events = chain(4)
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert events[0].prev_hash == GENESIS_HASH == "0" * 64
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(events))
    assert len({e.hash for e in events}) == 4
    assert all(len(e.hash) == 64 for e in events)


def test_empty_chain_is_clean() -> None:
    """No events, no problems; an empty store's head is (0, genesis)."""
    assert verify_chain([]) == []
    assert verify_chain([], head=(0, GENESIS_HASH)) == []


@pytest.mark.parametrize("n", [1, 2, 10])
def test_untouched_chain_is_clean(n: int) -> None:
    """An intact chain verifies with no problems, with or without the recorded head."""
    events = chain(n)
    assert verify_chain(events) == []
    assert verify_chain(events, head=head(events)) == []


def test_hash_is_deterministic_and_covers_seq_and_prev() -> None:
    """The same draft hashes the same; a different seq or prev_hash gives a different hash."""
    d = draft(1)
    h = chain_hash(d, seq=1, prev_hash=GENESIS_HASH)
    assert h == chain_hash(d, seq=1, prev_hash=GENESIS_HASH)
    assert h != chain_hash(d, seq=2, prev_hash=GENESIS_HASH)
    assert h != chain_hash(d, seq=1, prev_hash="1" * 64)


@pytest.mark.parametrize(
    "change",
    [
        {"result": {"ok": False, "n": 2}},
        {"actor": "U_MALLORY"},
        {"target": "gpu-node-08"},
        {"args": {"node": "gpu-node-08"}},
        {"dry_run": True},
        {"reason": ""},
        {"ts": T0},
        {"kind": "step.skipped"},
    ],
)
def test_edited_field_reports_that_row_changed(change: dict[str, object]) -> None:
    """Changing any field of row 2 (hash left as written) is reported on seq 2 only."""
    events = chain(4)
    events[1] = replace(events[1], **change)  # type: ignore[arg-type]
    assert problems(events) == [(2, "contents were changed after it was written")]


def test_edit_with_recomputed_hash_breaks_the_next_link() -> None:
    """Re-hashing an edited row hides the edit on that row but not on the row after it."""
    events = chain(4)
    forged = replace(events[1], result={"ok": False})
    events[1] = replace(forged, hash=chain_hash(forged, seq=2, prev_hash=forged.prev_hash))
    assert problems(events) == [(3, "prev_hash does not match the previous row")]


def test_deleting_a_middle_row_is_reported() -> None:
    """Removing seq 2 of 4 is reported on seq 3: a gap and a broken link."""
    events = chain(4)
    del events[1]
    assert problems(events) == [
        (3, "row(s) 2 deleted before it"),
        (3, "prev_hash does not match the previous row"),
    ]


def test_deleting_several_rows_names_the_range() -> None:
    """Removing seq 2..4 of 6 names the whole range."""
    events = chain(6)
    del events[1:4]
    assert (5, "row(s) 2..4 deleted before it") in problems(events)


def test_deleting_the_first_row_is_reported() -> None:
    """The chain must start at seq 1 from the genesis hash."""
    events = chain(3)[1:]
    assert problems(events) == [
        (2, "row(s) 1 deleted before it"),
        (2, "prev_hash does not match the previous row"),
    ]


def test_reordering_is_reported() -> None:
    """Swapping rows 2 and 3 is reported on both."""
    events = chain(4)
    events[1], events[2] = events[2], events[1]
    found = problems(events)
    assert (2, "out of order or inserted") in found
    assert {seq for seq, _ in found} >= {2, 3}
    assert all("changed" not in problem for _, problem in found)


def test_inserted_row_is_reported() -> None:
    """A forged row reusing an existing seq, even correctly hashed, is reported."""
    events = chain(3)
    d = draft(99)
    forged = AuditEvent(
        **vars(d),
        seq=2,
        prev_hash=events[1].hash,
        hash=chain_hash(d, seq=2, prev_hash=events[1].hash),
    )
    events.insert(2, forged)
    found = problems(events)
    assert (2, "out of order or inserted") in found
    assert (3, "prev_hash does not match the previous row") in found


def test_tail_deletion_is_caught_only_by_the_head() -> None:
    """Dropping the last rows leaves a valid chain; the recorded head exposes it."""
    events = chain(5)
    recorded = head(events)
    truncated = events[:3]
    assert verify_chain(truncated) == []
    assert problems(truncated, head=recorded) == [
        (
            None,
            f"head says seq 5 / hash {recorded[1][:12]}, last event is seq 3: "
            "events cut from the end",
        )
    ]


def test_deleting_every_row_is_caught_by_the_head() -> None:
    """An emptied table with a non-empty recorded head is reported."""
    events = chain(2)
    assert problems([], head=head(events)) == [
        (
            None,
            f"table empty but head says seq 2 / hash {events[1].hash[:12]}: "
            "every event was deleted",
        )
    ]


def test_head_with_wrong_hash_is_reported() -> None:
    """A head whose seq matches but whose hash does not is reported too."""
    events = chain(3)
    assert verify_chain(events, head=(3, "f" * 64)) != []


def test_keyed_chain_needs_the_key() -> None:
    """An HMAC chain verifies with its key and fails, row by row, without it or with another."""
    events = chain(3, key=KEY)
    assert verify_chain(events, key=KEY) == []
    assert verify_chain(events, key=KEY, head=head(events)) == []
    changed = [(i, "contents were changed after it was written") for i in (1, 2, 3)]
    assert problems(events) == changed
    assert problems(events, key=b"another-key") == changed


def test_keyed_and_plain_hashes_differ() -> None:
    """Without the key, a forger cannot recompute an HMAC row from the canonical form alone."""
    d = draft(1)
    assert chain_hash(d, seq=1, prev_hash=GENESIS_HASH, key=KEY) != chain_hash(
        d, seq=1, prev_hash=GENESIS_HASH
    )


def test_problem_reads_as_one_line() -> None:
    """ChainProblem prints as `row seq=N: problem`; one about the head as the problem alone."""
    assert str(ChainProblem(3, "x")) == "row seq=3: x"
    assert str(ChainProblem(None, "x")) == "x"


def test_as_json_has_every_field() -> None:
    """The export shape carries seq, both hashes and ISO timestamps."""
    event = chain(1)[0]
    data = event.as_json()
    assert data["seq"] == 1
    assert data["ts"] == "2026-11-22T02:00:01+00:00"
    assert data["prev_hash"] == GENESIS_HASH
    assert data["hash"] == event.hash
    assert data["args"] == {"node": "gpu-node-07"}


@given(n=st.integers(min_value=1, max_value=12), data=st.data())
def test_any_single_deletion_is_detected(n: int, data: st.DataObject) -> None:
    """Removing any one row from any chain is detected, given the recorded head."""
    events = chain(n)
    recorded = head(events)
    index = data.draw(st.integers(min_value=0, max_value=n - 1))
    del events[index]
    assert verify_chain(events, head=recorded) != []

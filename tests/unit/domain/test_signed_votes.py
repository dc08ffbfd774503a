"""The signed vote's message: one canonical form, strict fields, and a short life."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gpubot.domain.control.signed_votes import (
    SubmittedVote,
    check_message,
    fingerprint,
    key_blob,
    new_message,
    parse_message,
)
from gpubot.errors import ApprovalError

NOW = datetime(2026, 11, 22, 9, 0, 0, 500000, tzinfo=UTC)


def _message() -> bytes:
    return new_message(
        action="approve",
        target="apr-abc",
        run="run-1",
        step="release",
        user="U2",
        now=NOW,
        reason="",
    ).canonical()


def _stored(raw: bytes) -> SubmittedVote:
    body = json.loads(raw)
    return SubmittedVote(
        nonce=body["nonce"],
        action=body["action"],
        target=body["target"],
        message=raw,
        signature="sig",
        account="alice",
        submitted_at=NOW,
    )


def test_the_message_round_trips_in_its_one_canonical_form() -> None:
    raw = _message()
    message = parse_message(raw)
    assert message.canonical() == raw
    assert message.expires == datetime(2026, 11, 22, 9, 5, tzinfo=UTC)
    assert json.loads(raw)["ns"] == "gpubot-vote"
    # The same content spelled another way is not the signed bytes.
    for other in (json.dumps(json.loads(raw)).encode(), raw + b"\n", b" " + raw):
        with pytest.raises(ApprovalError, match="canonical"):
            parse_message(other)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"v": 2}, "v1 vote"),
        ({"ns": "git"}, "v1 vote"),
        ({"action": "promote"}, "is not one of gpubot's"),
        ({"user": "U2 U3"}, "user is not an id"),
        ({"target": ""}, "target is not an id"),
        ({"nonce": "short"}, "nonce"),
        ({"expires": "tomorrow"}, "expiry"),
        ({"reason": 5}, "not text"),
        ({"extra": "x"}, "fields"),
    ],
)
def test_malformed_messages_are_refused_in_one_line(
    change: dict[str, object], fragment: str
) -> None:
    body = {**json.loads(_message()), **change}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    with pytest.raises(ApprovalError, match=fragment):
        parse_message(raw)
    for junk in (b"\xff", b"[]", b"{", b"x" * 5000):
        with pytest.raises(ApprovalError):
            parse_message(junk)


def test_a_vote_counts_only_before_it_expires_and_only_as_stored() -> None:
    raw = _message()
    message, stored = parse_message(raw), _stored(raw)
    check_message(message, stored=stored, now=NOW + timedelta(minutes=4, seconds=59))
    with pytest.raises(ApprovalError, match="expired"):
        check_message(message, stored=stored, now=NOW + timedelta(minutes=5))
    far = replace(message, expires=NOW + timedelta(hours=1))
    with pytest.raises(ApprovalError, match="over 15 minutes"):
        check_message(far, stored=replace(stored, nonce=far.nonce), now=NOW)
    with pytest.raises(ApprovalError, match="not the vote it was stored as"):
        check_message(message, stored=replace(stored, target="apr-other"), now=NOW)


def test_fingerprints_are_openssh_sha256() -> None:
    line = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDOcMdfgnYJCyBUQINi1SlI0jzL7T3PVoT5tUus8wdgQ op1"
    kind, blob = key_blob(line)
    assert kind == "ssh-ed25519"
    assert fingerprint(blob) == "SHA256:NgB3mBlRPhwyP0Odnn7fXk5Ue2h97ezbTCDFvWZNhjA"
    with pytest.raises(ValueError, match="not a ssh-rsa key"):
        key_blob("ssh-rsa " + line.split()[1])

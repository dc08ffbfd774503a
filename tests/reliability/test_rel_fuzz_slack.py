"""hypothesis against /slack/events (correctly signed, fuzzed inside) and the `/gpu` parser."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import strategies as st
from reliability_fuzz import (
    LONG,
    SHORT,
    ErrorLog,
    assert_clean_reply,
    bolt_idle,
    error_log,
    fuzz,
    json_values,
    mutated,
)
from slack_harness import SlackHarness, sign, slack_harness

from gpubot.slack.commands import USAGE, UsageError, parse

BUDGETS = [
    pytest.param(SHORT, id="short"),
    pytest.param(LONG, id="long", marks=pytest.mark.fuzz_long),
]
VERBS = ("help", "status", "incidents", "show", "audit", "plan", "run", "triage", "xid", "idle")
WORDS = st.one_of(
    st.text(max_size=20).filter(lambda w: w.strip() == w and w != ""),
    st.sampled_from(
        [
            "xid79",
            "oom-triage",
            "release-node",
            "node=gpu-node-07",
            "node=gpu-node-99",
            "cluster=sim",
            "cluster=prod",
            "--dry-run",
            "namespace=train",
            "pod=job-1",
            "inc-00ff",
            "train/job-1",
            "sim",
            "gpu-node-03",
            "79",
            "open",
            "all",
            "node==x",
            "a=b=c",
        ]
    ),
)
command_texts = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda verb, words: " ".join([verb, *words]),
        st.sampled_from(VERBS) | st.text(max_size=8),
        st.lists(WORDS, max_size=4),
    ),
)


@dataclass
class SlackArena:
    runner: asyncio.Runner
    h: SlackHarness
    errors: ErrorLog

    def send(self, body: bytes, *, wait_for_reply: bool = False) -> httpx.Response:
        async def go() -> httpx.Response:
            before = len(self.h.standin.of("response_url"))
            reply = await self.h.events(body, sign(body))
            if wait_for_reply and reply.status_code == 200:
                await self.h.standin.wait_for(
                    lambda: len(self.h.standin.of("response_url")) > before
                )
            await bolt_idle()
            await self.h.settle()
            return reply

        return self.runner.run(go())


@pytest.fixture
def slack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackArena]:
    with asyncio.Runner() as runner, error_log() as errors:
        context = slack_harness(tmp_path, monkeypatch)
        h = runner.run(context.__aenter__())
        try:
            yield SlackArena(runner, h, errors)
        finally:
            runner.run(context.__aexit__(None, None, None))


def _form(fields: dict[str, str]) -> bytes:
    return urlencode(fields).encode()


SLACK_KEYS = ("command", "text", "user_id", "payload", "type", "team_id", "response_url")
form_fields = st.dictionaries(
    st.sampled_from(SLACK_KEYS) | st.text(max_size=10),
    st.one_of(
        st.text(max_size=40),
        st.sampled_from(
            ["/gpu", "/other", "block_actions", "U1", "{}", "[]", "null", '{"type": 1}']
        ),
        json_values.map(json.dumps),
    ),
    max_size=5,
)


@pytest.mark.parametrize("profile", BUDGETS)
def test_signed_form_bodies_never_fail_inside(slack: SlackArena, profile: str) -> None:
    """Correctly signed bodies with any form fields (odd commands, a `payload` that is not
    JSON or not an object): 200 or a 4xx with a one-line reason, and no exception anywhere,
    including in the listeners that run after the ack."""

    def check(fields: dict[str, str]) -> None:
        # The configured workspace and app unless the fields replace them: most bodies get
        # past the workspace check to bolt and the listeners.
        reply = slack.send(_form({"team_id": "T0001", "api_app_id": "A0001", **fields}))
        assert_clean_reply(reply)
        assert slack.errors.take() == []

    fuzz(profile, form_fields, check)


def _click(h: SlackHarness, approval_id: str) -> dict[str, Any]:
    body = h.click_body(approval_id, user="U1")
    return dict(json.loads(dict(_pairs(body))["payload"]))


def _pairs(body: bytes) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(body.decode())


@pytest.mark.parametrize("profile", BUDGETS)
def test_fuzzed_button_payloads_never_fail_inside(slack: SlackArena, profile: str) -> None:
    """block_actions payloads (a real approval click, with any field replaced or removed:
    user, actions, action ids, values, channel) are refused or obeyed, never a crash."""
    h = slack.h
    base = _click(h, "apr-does-not-exist")

    def check(payload: Any) -> None:
        reply = slack.send(_form({"payload": json.dumps(payload)}))
        assert_clean_reply(reply)
        assert slack.errors.take() == []

    fuzz(profile, mutated(st.just(base)), check)


@pytest.mark.parametrize("profile", BUDGETS)
def test_command_parser_answers_or_says_why(profile: str) -> None:
    """Any `/gpu` text parses into a command or a UsageError with a one-line reason; never
    another exception."""

    def check(text: str) -> None:
        problem = None
        try:
            parse(
                text,
                clusters={"sim", "prod"},
                runbooks={"xid79", "oom-triage", "release-node"},
                default_cluster="sim",
            )
        except UsageError as exc:
            problem = str(exc)
        if problem is not None:
            assert problem
            assert "\n" not in problem

    fuzz(profile, command_texts, check)


@pytest.mark.parametrize("profile", BUDGETS)
def test_slash_commands_always_get_an_answer(slack: SlackArena, profile: str) -> None:
    """The full `/gpu` path with any text: acked with 200, exactly one ephemeral answer (the
    usage text, a refusal, or the result), and nothing raised in the listener."""

    def check(text: str) -> None:
        answers = len(slack.h.standin.of("response_url"))
        reply = slack.send(slack.h.slash_body(text, user="U1"), wait_for_reply=True)
        assert reply.status_code == 200
        replies = slack.h.standin.of("response_url")[answers:]
        assert len(replies) == 1
        assert replies[0].args["response_type"] == "ephemeral"
        assert replies[0].args["text"]
        assert slack.errors.take() == []

    fuzz(profile, command_texts, check)


def test_usage_text_lists_every_verb() -> None:
    """The fuzzed verbs are the real ones: each is in the usage text users see."""
    for verb in VERBS:
        assert f"`{verb}" in USAGE


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"payload=00", "not readable JSON"),
        (b"payload=%7B", "not readable JSON"),
        (b"payload=1", "cannot be read"),
        (b'payload={"team": 1}', "cannot be read"),
        (b'payload={"type": "block_actions", "actions": null}', "block_actions payload"),
        (b'payload={"type": "block_actions", "user": {"id": "U1"}, "actions": [{}]}', "action_id"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_unreadable_bodies_get_a_401_unsigned_and_a_400_signed(
    slack: SlackArena, body: bytes, why: str
) -> None:
    """Bodies that once broke bolt before its signature check (a 500 and a traceback for
    anyone who could reach the endpoint): unsigned, a 401 before anything reads them; signed,
    a 400 with one line."""
    unsigned = slack.runner.run(slack.h.events(body, {}))
    assert unsigned.status_code == 401
    reply = slack.runner.run(slack.h.events(body, sign(body)))
    assert reply.status_code == 400
    assert why in reply.json()["error"]
    assert slack.errors.take() == []


def test_command_without_response_url_is_logged_not_raised(slack: SlackArena) -> None:
    """A signed `/gpu` with nowhere to send the answer: acked, one warning, no exception."""
    body = _form({"command": "/gpu", "text": "help", "user_id": "U1"})
    assert slack.send(body).status_code == 200
    assert slack.errors.take() == []

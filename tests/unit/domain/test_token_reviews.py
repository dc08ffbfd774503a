"""TokenReview answers read defensively, and the review cache: brief, bounded, hashed."""

from __future__ import annotations

from typing import Any

import pytest

from gpubot.domain.control.token_reviews import (
    POD_NAME_EXTRA,
    POD_UID_EXTRA,
    ReviewCache,
    looks_like_jwt,
    reviewed_from_status,
    token_key,
)


def test_an_authenticated_bound_token_names_its_pod() -> None:
    status = {
        "authenticated": True,
        "audiences": ["gpubot"],
        "user": {
            "username": "system:serviceaccount:gpubot:gpubot-agent",
            "extra": {POD_NAME_EXTRA: ["gpubot-agent-x1"], POD_UID_EXTRA: ["1234"]},
        },
    }
    r = reviewed_from_status(status)
    assert (r.pod_name, r.pod_uid, r.audiences) == ("gpubot-agent-x1", "1234", ("gpubot",))
    assert r.service_account == ("gpubot", "gpubot-agent")


@pytest.mark.parametrize(
    "status",
    [
        None,
        [],
        {},
        {"authenticated": "true"},  # a string is not a yes
        {"authenticated": False, "user": {"username": "system:serviceaccount:a:b"}},
        {"authenticated": 1},
    ],
)
def test_anything_but_authenticated_true_is_a_no(status: Any) -> None:
    assert not reviewed_from_status(status).authenticated


def test_two_pod_names_in_the_extra_name_no_pod() -> None:
    status = {
        "authenticated": True,
        "user": {"username": "u", "extra": {POD_NAME_EXTRA: ["a", "b"], POD_UID_EXTRA: "1"}},
    }
    r = reviewed_from_status(status)
    assert (r.pod_name, r.pod_uid, r.service_account) == (None, None, None)


def test_only_jwt_shaped_tokens_go_to_the_api_server() -> None:
    assert looks_like_jwt("eyJhbGciOi.eyJzdWIiOiJ4.c2lnbmF0dXJl")
    for junk in ("", "0" * 64, "a.b.c", "eyJhbGciOi.eyJzdWIiOiJ4.c2lnbmF0dXJl\n", "x" * 20000):
        assert not looks_like_jwt(junk)


def test_cache_answers_expire_on_the_clock() -> None:
    now = [0.0]
    cache: ReviewCache[str] = ReviewCache(now=lambda: now[0], ttl_s=10)
    cache.put("tok", "gpu-node-01")
    now[0] = 9.9
    assert cache.get("tok") == "gpu-node-01"
    now[0] = 10.0
    assert cache.get("tok") is None
    assert len(cache) == 0


def test_cache_is_bounded_and_keyed_by_hash() -> None:
    cache: ReviewCache[int] = ReviewCache(now=lambda: 0.0, ttl_s=60, size=3)
    for i in range(10):
        cache.put(f"token-{i}", i)
    assert len(cache) == 3
    assert [cache.get(f"token-{i}") for i in (6, 7, 8, 9)] == [None, 7, 8, 9]
    assert "token-9" not in repr(vars(cache))
    assert token_key("token-9") in repr(vars(cache))


def test_a_zero_ttl_caches_nothing() -> None:
    cache: ReviewCache[int] = ReviewCache(now=lambda: 0.0, ttl_s=0)
    cache.put("t", 1)
    assert cache.get("t") is None


async def test_at_most_in_flight_reviews_run_at_once_and_one_per_token() -> None:
    """Junk tokens each cost a review: their number in flight is bounded; the same token
    asked by many requests at once is reviewed once."""
    import asyncio

    cache: ReviewCache[str] = ReviewCache(now=lambda: 0.0, ttl_s=10, in_flight=2)
    running = peak = calls = 0
    gate = asyncio.Event()

    async def review() -> str:
        nonlocal running, peak, calls
        calls += 1
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1
        return "ok"

    tasks = [asyncio.create_task(cache.answer(f"junk-{i}", review)) for i in range(6)]
    tasks += [asyncio.create_task(cache.answer("same", review)) for _ in range(4)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert running == 2
    gate.set()
    assert set(await asyncio.gather(*tasks)) == {"ok"}
    assert peak == 2
    assert calls == 7  # six junk tokens, and "same" once

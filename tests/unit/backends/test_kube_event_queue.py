"""Node Events leave the step's path: queued, posted in order by a few workers, a failure
logged without stopping the rest, a full queue dropping and counting, flush bounded."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from gpubot.backends.kube.event_queue import EventQueue
from gpubot.errors import TemporaryStepError


class Server:
    """A stand-in for the API server's events endpoint: holds each POST until released."""

    def __init__(self, *, fail: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.fail = fail
        self.posted: list[str] = []
        self.open = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def post(self, body: dict[str, Any]) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.open.wait()
            if body["reason"] in self.fail:
                raise TemporaryStepError("cannot reach the API server (create events)")
            self.posted.append(body["reason"])
        finally:
            self.in_flight -= 1


def body(reason: str) -> dict[str, Any]:
    return {"reason": reason}


async def test_put_returns_before_the_post_and_flush_waits_for_it() -> None:
    server = Server()
    queue = EventQueue(server.post, workers=1)
    queue.put(body("GpubotCordon"), what="GpubotCordon on gpu-a")
    await asyncio.sleep(0)
    assert server.posted == []
    assert len(queue) == 1
    server.open.set()
    assert await queue.flush(timeout_s=5) == 0
    assert server.posted == ["GpubotCordon"]
    assert queue.posted == 1


async def test_events_are_posted_in_the_order_they_were_made() -> None:
    server = Server()
    server.open.set()
    queue = EventQueue(server.post, workers=1)
    for reason in ("GpubotCordon", "GpubotDrain", "GpubotUncordon"):
        queue.put(body(reason), what=reason)
    assert await queue.flush(timeout_s=5) == 0
    assert server.posted == ["GpubotCordon", "GpubotDrain", "GpubotUncordon"]


async def test_no_more_posts_in_flight_than_workers() -> None:
    server = Server()
    queue = EventQueue(server.post, workers=2)
    for i in range(20):
        queue.put(body(f"E{i}"), what=f"E{i}")
    await asyncio.sleep(0)
    assert server.in_flight == 2
    server.open.set()
    assert await queue.flush(timeout_s=5) == 0
    assert server.most_in_flight == 2
    assert len(server.posted) == 20


async def test_a_failed_post_is_logged_and_the_next_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server(fail={"Bad"})
    server.open.set()
    queue = EventQueue(server.post, workers=1)
    with caplog.at_level(logging.WARNING):
        queue.put(body("Bad"), what="Bad on gpu-a")
        queue.put(body("Good"), what="Good on gpu-b")
        assert await queue.flush(timeout_s=5) == 0
    assert server.posted == ["Good"]
    assert (queue.failed, queue.posted) == (1, 1)
    assert "could not post the Bad on gpu-a event" in caplog.text


async def test_a_full_queue_drops_new_events_and_counts_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server()
    queue = EventQueue(server.post, workers=1, limit=3)
    with caplog.at_level(logging.WARNING):
        queue.put(body("E0"), what="E0")
        await asyncio.sleep(0)  # the worker takes it
        for i in range(1, 6):
            queue.put(body(f"E{i}"), what=f"E{i}")
    # One went to the worker at once; three wait; the last two found the queue full.
    assert queue.dropped == 2
    assert "dropped E5" not in caplog.text
    assert "dropped E4" in caplog.text
    server.open.set()
    assert await queue.flush(timeout_s=5) == 0
    assert server.posted == ["E0", "E1", "E2", "E3"]


async def test_flush_is_bounded_and_says_what_is_left() -> None:
    server = Server()  # never answers
    queue = EventQueue(server.post, workers=1)
    queue.put(body("A"), what="A")
    queue.put(body("B"), what="B")
    assert await queue.flush(timeout_s=0) == 2  # one in flight, one waiting


async def test_flush_with_nothing_queued_returns_at_once() -> None:
    assert await EventQueue(Server().post).flush(timeout_s=0) == 0


def test_events_queued_under_an_ended_loop_are_posted_by_the_next_one() -> None:
    """A CLI command's loop may end with Events still waiting; the next loop posts them."""
    server = Server()
    queue = EventQueue(server.post, workers=1)

    async def first() -> None:
        queue.put(body("A"), what="A")
        await asyncio.sleep(0)  # its worker waits on the server, then the loop ends

    async def second() -> int:
        server.open = asyncio.Event()
        server.open.set()
        queue.put(body("B"), what="B")
        return await queue.flush(timeout_s=5)

    asyncio.run(first())
    assert asyncio.run(second()) == 0
    assert server.posted == ["B"]  # A was in flight on the ended loop: gone with it

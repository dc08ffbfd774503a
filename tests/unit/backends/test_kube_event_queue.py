"""Node Events leave the step's path: queued, posted in order by a few workers, a failure
logged without stopping the rest, a full queue dropping and counting, flush bounded; while
other requests keep coming the Events wait for a lull, never longer than yield_s."""

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


class Clock:
    """A fake monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_events_wait_while_other_requests_keep_coming_and_go_in_the_lull() -> None:
    """A storm's cordons take the request budget first: an Event queued while they come
    waits; once they have paused for quiet_s it is posted."""
    server, clock = Server(), Clock()
    server.open.set()
    queue = EventQueue(server.post, workers=1, quiet_s=0.25, yield_s=10, clock=clock)
    queue.note_other()  # a cordon PATCH starts
    queue.put(body("GpubotCordon"), what="GpubotCordon on gpu-a")
    await _settle()
    assert server.posted == []  # the fake clock has not moved: still inside the storm
    clock.now += 0.2
    queue.note_other()  # another cordon
    clock.now += 0.2
    queue.nudge()
    await _settle()
    assert server.posted == []  # 0.2 s since the last cordon: not yet a lull
    clock.now += 0.1
    queue.nudge()
    assert await queue.flush(timeout_s=5) == 0
    assert server.posted == ["GpubotCordon"]


async def test_no_event_waits_longer_than_yield_s_for_a_lull() -> None:
    server, clock = Server(), Clock()
    server.open.set()
    queue = EventQueue(server.post, workers=1, quiet_s=0.25, yield_s=10, clock=clock)
    queue.put(body("Old"), what="Old")
    queue.note_other()
    await _settle()
    assert server.posted == []
    assert len(queue) == 1
    clock.now += 9.9
    queue.note_other()  # the storm goes on
    queue.nudge()
    await _settle()
    assert server.posted == []
    clock.now += 0.1  # the Event has waited 10 s: it goes though the storm does not pause
    queue.note_other()
    queue.nudge()
    await _settle()
    assert server.posted == ["Old"]


async def test_flush_posts_waiting_events_at_once_even_mid_storm() -> None:
    """At shutdown nothing is left behind for a lull that will not come."""
    server, clock = Server(), Clock()
    server.open.set()
    queue = EventQueue(server.post, workers=2, quiet_s=0.25, yield_s=10, clock=clock)
    queue.note_other()
    for i in range(3):
        queue.put(body(f"E{i}"), what=f"E{i}")
    await _settle()
    assert server.posted == []
    assert await queue.flush(timeout_s=5) == 0
    assert sorted(server.posted) == ["E0", "E1", "E2"]

"""Group commit: calls that arrive during a write share the next one; each caller gets its own
result or its own error, and one bad call cannot fail the calls grouped with it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from gpubot.backends.store.grouping import MAX_GROUP, GroupCommit


class Recorder:
    """A write that records each group it was given; it fails any group holding "bad"."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def write(self, items: Sequence[str]) -> list[str]:
        self.groups.append(list(items))
        await self.gate.wait()
        if "bad" in items:
            raise ValueError("bad item in the group")
        return [item.upper() for item in items]


async def held_write(
    first: str, *behind: str
) -> tuple[Recorder, asyncio.Task[str], list[asyncio.Task[str]]]:
    """A write for `first` under way and held at the gate, with `behind` submitted during it;
    open the gate (rec.gate.set()) to let the writes go."""
    rec = Recorder()
    group = GroupCommit(rec.write)
    rec.gate.clear()
    started = asyncio.create_task(group.submit(first))
    await asyncio.sleep(0)  # the write for `first` is now under way and held
    waiting = [asyncio.create_task(group.submit(x)) for x in behind]
    await asyncio.sleep(0)
    return rec, started, waiting


async def test_calls_arriving_during_a_write_share_the_next_one() -> None:
    rec, first, later = await held_write("a", "b", "c", "d")
    rec.gate.set()
    assert await first == "A"
    assert [await t for t in later] == ["B", "C", "D"]
    assert rec.groups == [["a"], ["b", "c", "d"]]


async def test_a_lone_call_is_written_at_once_not_after_a_delay() -> None:
    rec = Recorder()
    group = GroupCommit(rec.write)
    assert await asyncio.wait_for(group.submit("x"), timeout=1) == "X"
    assert rec.groups == [["x"]]


async def test_a_failed_group_is_retried_one_by_one_and_only_the_bad_call_fails() -> None:
    rec, first, rest = await held_write("a", "b", "bad", "c")
    rec.gate.set()
    results = await asyncio.gather(first, *rest, return_exceptions=True)
    assert (results[0], results[1], results[3]) == ("A", "B", "C")
    assert isinstance(results[2], ValueError)
    assert rec.groups == [["a"], ["b", "bad", "c"], ["b"], ["bad"], ["c"]]


async def test_a_lone_failing_call_is_not_written_twice() -> None:
    rec = Recorder()
    group = GroupCommit(rec.write)
    with pytest.raises(ValueError, match="bad item"):
        await group.submit("bad")
    assert rec.groups == [["bad"]]


async def test_a_caller_that_went_away_does_not_disturb_the_others() -> None:
    rec, first, (gone, kept) = await held_write("a", "b", "c")
    gone.cancel()
    rec.gate.set()
    assert await first == "A"
    assert await kept == "C"
    assert rec.groups[1] == ["b", "c"]  # still written: durable once accepted into a group


async def test_a_group_is_bounded() -> None:
    rec, first, many = await held_write("first", *(f"i{n}" for n in range(MAX_GROUP + 5)))
    rec.gate.set()
    await asyncio.gather(first, *many)
    assert [len(g) for g in rec.groups] == [1, MAX_GROUP, 5]


def test_the_group_follows_a_new_event_loop() -> None:
    """The CLI and tests run one loop after another on the same store."""
    rec = Recorder()
    group = GroupCommit(rec.write)
    assert asyncio.run(group.submit("one")) == "ONE"
    assert asyncio.run(group.submit("two")) == "TWO"

"""Group commit: calls that arrive while a write is under way share the next transaction."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

log = logging.getLogger(__name__)

# A bound on one transaction's size, so a storm cannot build one huge write.
MAX_GROUP = 64


class GroupCommit(Generic[In, Out]):
    """Runs `write` over the calls waiting in turn, one transaction per group.

    No call waits on purpose: the first one starts a write at once, and the ones that come
    in while it runs go together in the next. A caller's result exists only after its
    group's commit. When a group fails, each of its calls is tried alone, so one bad call
    cannot fail the others, and each caller gets its own error.
    """

    def __init__(self, write: Callable[[Sequence[In]], Awaitable[Sequence[Out]]]) -> None:
        self._write = write
        self._pending: list[tuple[In, asyncio.Future[Out]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: In) -> Out:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Out] = loop.create_future()
        self._pending.append((item, future))
        flusher = self._flusher
        if flusher is None or flusher.done() or flusher.get_loop() is not loop:
            self._flusher = loop.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        while self._pending:
            group = self._pending[:MAX_GROUP]
            del self._pending[:MAX_GROUP]
            try:
                results = await self._write([item for item, _ in group])
            except Exception as exc:
                if len(group) == 1:
                    _fail(group[0][1], exc)
                    continue
                log.info("a group of %d writes failed (%s); writing each alone", len(group), exc)
                for item, future in group:
                    await self._alone(item, future)
                continue
            except BaseException as exc:  # cancelled with the loop: fail whoever waits
                for _item, future in group + self._pending:
                    _fail(future, exc)
                self._pending.clear()
                raise
            for (_item, future), result in zip(group, results, strict=True):
                _resolve(future, result)

    async def _alone(self, item: In, future: asyncio.Future[Out]) -> None:
        try:
            [result] = await self._write([item])
        except Exception as exc:
            _fail(future, exc)
        else:
            _resolve(future, result)


def _resolve(future: asyncio.Future[Out], result: Out) -> None:
    if not future.done():  # its caller may have gone (a closed connection)
        future.set_result(result)


def _fail(future: asyncio.Future[Out], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

"""Outbound Slack queue: per-channel rate, merged progress edits, Retry-After, nothing dropped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gpubot.clock import SystemClock
from gpubot.ports import Clock

log = logging.getLogger(__name__)


@dataclass
class Payload:
    """What one message shows; `source` is the neutral form, kept so updates can merge."""

    text: str
    blocks: list[dict[str, Any]]
    source: Any = None


Combine = Callable[[Payload, Payload], Payload]
OnSent = Callable[[str, str], Awaitable[None]]


class Ref:
    """A message that is, or will be, in Slack: (channel id, ts) once posted."""

    def __init__(self, channel: str | None = None, ts: str | None = None) -> None:
        self._where: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        if channel is not None and ts is not None:
            self._where.set_result((channel, ts))

    def resolve(self, channel: str, ts: str) -> None:
        if not self._where.done():
            self._where.set_result((channel, ts))

    def fail(self, exc: BaseException) -> None:
        if not self._where.done():
            self._where.set_exception(exc)
            self._where.exception()  # retrieved: waiters re-raise, nobody logs "never retrieved"

    async def where(self) -> tuple[str, str]:
        return await asyncio.shield(self._where)


@dataclass(frozen=True)
class Upload:
    """A file for files_upload_v2 (e.g. a report's chart)."""

    content: bytes
    filename: str
    title: str


@dataclass(eq=False)
class _Item:
    kind: str  # post | edit | upload
    channel: str
    payload: Payload
    ref: Ref  # the message posted, or the message edited
    thread: Ref | None = None
    merge_key: str | None = None
    combine: Combine | None = None
    on_sent: OnSent | None = None
    upload: Upload | None = None
    started: bool = False


@dataclass
class _ThreadState:
    last_queued: _Item | None = None
    last_sent: tuple[str | None, Ref, Payload] | None = None  # merge key, message, content


@dataclass
class OutboxStats:
    calls: int = 0
    rate_limited: int = 0
    server_errors: int = 0  # 5xx answers and network errors (each retried)
    client_errors: int = 0  # other 4xx answers: permanent, the message is given up
    merged: int = 0


class SlackOutbox:
    """One worker per channel sends in order, at most `per_second` calls per channel.

    Consecutive progress messages (same `merge_key`, nothing else in between in the thread)
    become one message: merged while queued, or a chat.update once sent. A 429 waits out
    Retry-After and a 5xx or network error backs off; both retry the same call, so order
    within a thread holds and no message is dropped.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        per_second: float = 1.0,
        max_backoff: float = 60.0,
        max_server_errors: int = 20,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.clock: Clock = clock or SystemClock()
        self.interval = 1.0 / per_second
        self.max_backoff = max_backoff
        self.max_server_errors = max_server_errors
        self.stats = OutboxStats()
        self._queues: dict[str, asyncio.Queue[_Item]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._next_at: dict[str, float] = {}
        self._threads: dict[Ref, _ThreadState] = {}
        self._pending_edits: dict[Ref, _Item] = {}
        self._alias: dict[str, str] = {}  # channel id -> the name it was first posted as

    # -- enqueue --------------------------------------------------------------------------

    def post(
        self,
        channel: str,
        payload: Payload,
        *,
        thread: Ref | None = None,
        merge_key: str | None = None,
        combine: Combine | None = None,
        on_sent: OnSent | None = None,
    ) -> Ref:
        if thread is not None and merge_key is not None and combine is not None:
            state = self._threads.setdefault(thread, _ThreadState())
            last = state.last_queued
            if last is not None and not last.started and last.merge_key == merge_key:
                last.payload = combine(last.payload, payload)
                self.stats.merged += 1
                return last.ref
        item = _Item(
            "post",
            channel,
            payload,
            Ref(),
            thread=thread,
            merge_key=merge_key,
            combine=combine,
            on_sent=on_sent,
        )
        if thread is not None:
            self._threads.setdefault(thread, _ThreadState()).last_queued = item
        self._enqueue(item)
        return item.ref

    def edit(self, channel: str, ref: Ref, payload: Payload) -> None:
        """Replace a message's content; a queued edit of the same message is superseded."""
        pending = self._pending_edits.get(ref)
        if pending is not None and not pending.started:
            pending.payload = payload
            self.stats.merged += 1
            return
        item = _Item("edit", channel, payload, ref)
        self._pending_edits[ref] = item
        self._enqueue(item)

    def upload(self, channel: str, upload: Upload, *, thread: Ref) -> Ref:
        """Upload a file into the thread of a message posted (or queued) in `channel`."""
        item = _Item("upload", channel, Payload(upload.title, []), Ref(), thread=thread)
        item.upload = upload
        self._enqueue(item)
        return item.ref

    def _enqueue(self, item: _Item) -> None:
        key = self._alias.get(item.channel, item.channel)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = asyncio.Queue()
            self._workers[key] = asyncio.get_running_loop().create_task(self._work(key, queue))
        queue.put_nowait(item)

    @property
    def pending(self) -> int:
        """Messages queued or in flight."""
        return sum(q._unfinished_tasks for q in self._queues.values())  # type: ignore[attr-defined]

    async def flush(self) -> None:
        """Wait until every queued message has been sent (or has failed for good)."""
        while self.pending:
            await asyncio.gather(*(q.join() for q in list(self._queues.values())))

    async def aclose(self) -> None:
        workers, self._workers, self._queues = self._workers, {}, {}
        for task in workers.values():
            task.cancel()
        for task in workers.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- send -----------------------------------------------------------------------------

    async def _work(self, key: str, queue: asyncio.Queue[_Item]) -> None:
        while True:
            item = await queue.get()
            item.started = True
            try:
                await self._deliver(key, item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the worker's edge: one bad message must not stop the rest
                log.error("slack: giving up on a message to %s: %s", item.channel, exc)
                item.ref.fail(exc)
            finally:
                if self._pending_edits.get(item.ref) is item:
                    del self._pending_edits[item.ref]
                queue.task_done()

    async def _deliver(self, key: str, item: _Item) -> None:
        if item.kind == "upload":
            await self._upload(key, item)
            return
        if item.kind == "edit":
            channel, ts = await item.ref.where()
            await self._call(key, "chat.update", channel=channel, ts=ts, payload=item.payload)
            return
        thread_ts = None
        state = None
        if item.thread is not None:
            _, thread_ts = await item.thread.where()
            state = self._threads.setdefault(item.thread, _ThreadState())
            last = state.last_sent
            if last is not None and item.merge_key is not None and last[0] == item.merge_key:
                # Nothing else was posted in this thread since: edit that message instead.
                assert item.combine is not None
                merged = item.combine(last[2], item.payload)
                channel, ts = await last[1].where()
                await self._call(key, "chat.update", channel=channel, ts=ts, payload=merged)
                state.last_sent = (item.merge_key, last[1], merged)
                item.ref.resolve(channel, ts)
                self.stats.merged += 1
                return
        reply = await self._call(
            key, "chat.postMessage", channel=item.channel, thread_ts=thread_ts, payload=item.payload
        )
        channel, ts = str(reply["channel"]), str(reply["ts"])
        if channel != item.channel:
            self._alias.setdefault(channel, key)
        item.ref.resolve(channel, ts)
        if state is not None:
            state.last_sent = (item.merge_key, item.ref, item.payload)
        if item.on_sent is not None:
            await item.on_sent(channel, ts)

    async def _upload(self, key: str, item: _Item) -> None:
        assert item.thread is not None
        assert item.upload is not None
        channel, parent = await item.thread.where()  # a channel id: files.* need one
        await self._call(
            key,
            "files.upload",
            channel=channel,
            thread_ts=parent,
            payload=item.payload,
            upload=item.upload,
        )
        item.ref.resolve(channel, parent)

    async def _call(
        self,
        key: str,
        method: str,
        *,
        channel: str,
        payload: Payload,
        ts: str | None = None,
        thread_ts: str | None = None,
        upload: Upload | None = None,
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"channel": channel, "text": payload.text, "blocks": payload.blocks}
        if upload is not None:
            args = {
                "channel": channel,
                "file": upload.content,
                "filename": upload.filename,
                "title": upload.title,
                "request_file_info": False,  # files.info would need files:read; nothing uses it
            }
        if ts is not None:
            args["ts"] = ts
        if thread_ts is not None:
            args["thread_ts"] = thread_ts
        server_errors = 0
        while True:
            await self._pace(key)
            self.stats.calls += 1
            try:
                if method == "files.upload":
                    reply = await self.client.files_upload_v2(**args)
                elif method == "chat.update":
                    reply = await self.client.chat_update(**args)
                else:
                    reply = await self.client.chat_postMessage(**args)
                return dict(reply.data) if isinstance(reply.data, dict) else {}
            except SlackApiError as exc:
                status = exc.response.status_code
                if status == 429:
                    self.stats.rate_limited += 1
                    self._hold(key, _retry_after(exc.response.headers))
                    continue
                if status < 500:
                    self.stats.client_errors += 1
                    raise  # a permanent answer (channel_not_found, invalid_blocks, ...)
                server_errors += 1
            except (ClientError, TimeoutError, OSError):
                server_errors += 1
            finally:
                # The next call waits one interval after this answer: Slack counts arrivals,
                # so a slow answer must not let two calls arrive closer than the interval.
                self._hold(key, self.interval)
            self.stats.server_errors += 1
            if server_errors >= self.max_server_errors:
                raise RuntimeError(f"{method}: Slack kept failing ({server_errors} attempts)")
            self._hold(key, min(self.max_backoff, self.interval * 2**server_errors))

    async def _pace(self, key: str) -> None:
        wait = self._next_at.get(key, 0.0) - self.clock.monotonic()
        if wait > 0:
            await self.clock.sleep(wait)

    def _hold(self, key: str, seconds: float) -> None:
        self._next_at[key] = max(self._next_at.get(key, 0.0), self.clock.monotonic() + seconds)


def _retry_after(headers: Any) -> float:
    value = None
    if headers:
        value = headers.get("Retry-After") or headers.get("retry-after")
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0

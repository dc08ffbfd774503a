"""Reflector: one kind of object kept by a LIST and a WATCH in a thread of its own.

An informer in miniature. One LIST, then a WATCH from its resourceVersion; the watch is
reopened where it stopped every `watch_seconds` (the server ends it cleanly), the whole set is
re-listed every `resync_seconds` and whenever the server says the version is gone (410), so a
missed event cannot live longer than one resync. Everything blocking runs in the reflector's
own thread, never on the event loop. A subclass says what it keeps: `_digest` reads one object
(outside the lock), `_replace` and `_apply` change what is kept (with the lock held).

Staleness: while the watch is open what is kept lags the server by the watch's delivery
latency (milliseconds on a healthy server) and is `live`; once the watch breaks it stops at
`as_of`, and readers go to the server instead.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)
GONE = 410
D = TypeVar("D")  # what `_digest` makes of one object


class _Gone(Exception):
    """The resourceVersion the watch resumes from is no longer kept: list again."""


class Reflector(ABC, Generic[D]):
    """Objects of one kind, kept current by a watch (see module doc)."""

    kind = "object"  # for log lines and the thread's name
    # None: one LIST from the API server's watch cache. A number: LIST in pages of that many
    # objects (each page read and dropped before the next), for kinds whose whole list
    # would not fit in the process's memory at once.
    page_size: int | None = None

    def __init__(
        self,
        list_objects: Callable[..., Any],
        *,
        resync_seconds: float,
        watch_seconds: float = 60.0,
        request_timeout: float = 30.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`list_objects`: the generated client's LIST for the kind (`list_node`, ...)."""
        self._list_objects = list_objects
        self._resync = resync_seconds
        self._watch_seconds = watch_seconds
        self._timeout = request_timeout
        self._now = now
        self._lock = threading.Lock()
        self._live = False
        self._as_of: datetime | None = None
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: watch.Watch | None = None
        self.lists = 0  # full LISTs made: one at start, one per resync or 410

    # -- what a subclass keeps (the last two with the lock held) ----------------------------

    @abstractmethod
    def _digest(self, obj: Mapping[str, Any]) -> D | None:
        """What is kept of one object as the API server's JSON has it; None: nothing (an
        object without a name)."""

    @abstractmethod
    def _replace(self, digests: Sequence[D]) -> None:
        """Everything kept, from a full LIST."""

    @abstractmethod
    def _apply(self, event: str, digest: D) -> None:
        """One watch event (ADDED, MODIFIED, DELETED)."""

    # -- lifecycle ------------------------------------------------------------------------

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    @property
    def live(self) -> bool:
        """The first LIST has finished and the watch is open."""
        with self._lock:
            return self._live

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"kube-{self.kind}-cache", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if (w := self._watch) is not None:
            w.stop()  # type: ignore[no-untyped-call]
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                version = self._list()
                backoff = 1.0
                resync_at = time.monotonic() + self._resync
                while not self._stop.is_set() and (left := resync_at - time.monotonic()) > 0:
                    seconds = max(1, round(min(left, self._watch_seconds)))
                    version = self._follow(version, seconds=seconds)
            except _Gone:
                log.info("%s watch: resourceVersion expired; listing again", self.kind)
            except Exception as exc:  # the thread's outer edge: it must outlive any error
                self._set_live(False)
                log.warning("%s cache: %s; retrying in %.0fs", self.kind, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _list(self) -> str:
        """A full LIST as raw JSON (the client's models cost far more to build); its version,
        which the watch resumes from. In one piece from the API server's watch cache
        (resourceVersion 0, as client-go's reflectors list): a quorum LIST can return a
        version the cache has not reached, when the last writes were to other kinds, and the
        watch then fails with "Too large resource version" (the loop backs off and lists
        again). In pages (`page_size`): the server ignores a limit on a LIST from its watch
        cache, so paged LISTs are quorum reads, all pages at the first page's version."""
        digests: list[D] = []
        version = ""
        for body in self._pages():
            items = body.get("items") or []
            digests.extend(d for item in items if (d := self._digest(item)) is not None)
            version = str((body.get("metadata") or {}).get("resourceVersion") or version)
        with self._lock:
            self._replace(digests)
            self._as_of = self._now()
            self._live = True
        self.lists += 1
        self._synced.set()
        return version

    def _pages(self) -> Iterator[dict[str, Any]]:
        if self.page_size is None:
            response: Any = self._list_objects(
                resource_version="0", _preload_content=False, _request_timeout=self._timeout
            )
            yield json.loads(response.data)
            return
        token: str | None = None
        while True:
            try:
                response = self._list_objects(
                    limit=self.page_size,
                    _continue=token,
                    _preload_content=False,
                    _request_timeout=self._timeout,
                )
            except ApiException as exc:
                if exc.status == GONE:  # the continue token expired: list from the start
                    raise _Gone from exc
                raise
            body = json.loads(response.data)
            yield body
            token = (body.get("metadata") or {}).get("continue") or None
            if token is None:
                return

    def _follow(self, version: str, *, seconds: int) -> str:
        """Apply watch events from `version` until the server ends the watch; the last version."""
        self._watch = w = watch.Watch()  # type: ignore[no-untyped-call]
        for event in self._events(w, version, seconds):
            kind, obj = event.get("type"), event.get("object") or {}
            meta = obj.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            digest = self._digest(obj)
            if digest is None:
                continue
            with self._lock:
                self._apply(str(kind), digest)
                self._as_of = self._now()
        with self._lock:
            self._as_of = self._now()  # the server ended the watch cleanly: all delivered
        return version

    def _events(self, w: watch.Watch, version: str, seconds: int) -> Iterator[dict[str, Any]]:
        # The events as JSON, not the client's models. Not through deserialize=False: with
        # it the client fails on ERROR events (a 410 among them) with a KeyError; a function
        # that names no return type gets the JSON, and an ERROR event becomes an ApiException.
        def list_objects(**kw: Any) -> Any:
            return self._list_objects(**kw)

        try:
            yield from w.stream(  # type: ignore[no-untyped-call]
                list_objects,
                resource_version=version,
                timeout_seconds=seconds,
                allow_watch_bookmarks=True,
                _request_timeout=(self._timeout, seconds + self._timeout),
            )
        except ApiException as exc:
            if exc.status == GONE:
                raise _Gone from exc
            raise

    def _set_live(self, live: bool) -> None:
        with self._lock:
            if self._live != live:
                self._live = live
                self._changed_liveness()

    def _changed_liveness(self) -> None:
        """Called with the lock held when the watch opens or breaks."""

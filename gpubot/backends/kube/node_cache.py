"""NodeCache: the fleet's Nodes, kept by one LIST and a WATCH in a thread.

An informer in miniature, for what the blast-radius cap reads (which Nodes have GPUs and which
of those are unschedulable) and for node reads that may lag by the watch's latency (plans, and
writes that send the version they read back, so the API server refuses them if it moved).

One LIST, then a WATCH from its resourceVersion; the watch is reopened where it stopped every
`watch_seconds` (the server ends it cleanly), the whole set is re-listed every `resync_seconds`
and whenever the server says the version is gone (410), so a missed event cannot live longer
than one resync. Everything blocking runs in the cache's own thread, never on the event loop;
readers get an immutable FleetView, or one Node, in O(1).

Staleness: while the watch is open the view lags the server by the watch's delivery latency
(milliseconds on a healthy server) and is `live`; once the watch breaks the view stops at
`as_of`, and the reader (KubernetesKubeApi.gpu_fleet) lists instead when it is too old.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from gpubot.backends.kube.convert import gpu_devices, node_info_json
from gpubot.domain.fleet.cluster import FleetView, NodeInfo

log = logging.getLogger(__name__)
GONE = 410


class _Gone(Exception):
    """The resourceVersion the watch resumes from is no longer kept: list again."""


class NodeCache:
    """GPU nodes and their `spec.unschedulable`, kept current by a watch (see module doc)."""

    def __init__(
        self,
        core: client.CoreV1Api,
        *,
        resync_seconds: float = 300.0,
        watch_seconds: float = 60.0,
        request_timeout: float = 30.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_release: Callable[[], None] | None = None,
    ) -> None:
        self._core = core
        self._resync = resync_seconds
        self._watch_seconds = watch_seconds
        self._timeout = request_timeout
        self._now = now
        self._on_release = on_release
        self._lock = threading.Lock()
        self._nodes: dict[str, tuple[bool, bool]] = {}  # name → (has GPUs, unschedulable)
        # The GPU nodes, and those of them unschedulable, kept with every event: a view
        # copies them (in C) instead of walking every Node in Python.
        self._gpu: set[str] = set()
        self._out: set[str] = set()
        self._infos: dict[str, NodeInfo] = {}  # name → the Node as last seen, converted
        self._sets: tuple[frozenset[str], frozenset[str], dict[str, int]] | None = None
        self._released = 0
        self._became: dict[str, int] = {}  # GPU node → times seen becoming cordoned
        self._live = False
        self._as_of: datetime | None = None
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: watch.Watch | None = None
        self.lists = 0  # full LISTs made: one at start, one per resync or 410

    # -- readers (any thread) -------------------------------------------------------------

    def view(self) -> FleetView | None:
        """The fleet as last seen; None before the first LIST has finished."""
        with self._lock:
            if self._as_of is None:
                return None
            if self._sets is None:
                self._sets = (frozenset(self._gpu), frozenset(self._out), dict(self._became))
            gpu, cordoned, became = self._sets
            # While the watch is open the view is current as far as it can tell, as of now.
            as_of = self._now() if self._live else self._as_of
            return FleetView(
                gpu_nodes=gpu,
                cordoned=cordoned,
                as_of=as_of,
                released=self._released,
                live=self._live,
                cordon_seen=became,
            )

    def node(self, name: str) -> NodeInfo | None:
        """The Node as the watch last delivered it, while the watch is open; None when it is
        not (or the node is unknown, or its fields did not read): read from the server then."""
        with self._lock:
            return self._infos.get(name) if self._live else None

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kube-node-cache", daemon=True)
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
                log.info("node watch: resourceVersion expired; listing again")
            except Exception as exc:  # the thread's outer edge: it must outlive any error
                self._set_live(False)
                log.warning("node cache: %s; retrying in %.0fs", exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _list(self) -> str:
        """A full LIST as raw JSON (the client's models cost ~0.4 ms per Node to build), from
        the API server's watch cache (resourceVersion 0, as client-go's reflectors list): its
        version is one the watch can resume from. A quorum LIST can return a version the
        cache has not reached, when the last writes were to other kinds, and the watch then
        fails with "Too large resource version"."""
        response: Any = self._core.list_node(
            resource_version="0", _preload_content=False, _request_timeout=self._timeout
        )
        body = json.loads(response.data)
        read = [f for item in body.get("items") or [] if (f := _facts(item)) is not None]
        nodes = {name: fact for name, fact, _ in read}
        infos = {name: info for name, _, info in read if info is not None}
        with self._lock:
            before = self._nodes
            self._nodes = nodes
            self._infos = infos
            self._gpu = {n for n, (g, _) in nodes.items() if g}
            self._out = {n for n, (g, u) in nodes.items() if g and u}
            self._note_release(before, self._nodes)
            self._sets = None
            self._as_of = self._now()
            self._live = True
        self.lists += 1
        self._synced.set()
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _follow(self, version: str, *, seconds: int) -> str:
        """Apply watch events from `version` until the server ends the watch; the last version."""
        self._watch = w = watch.Watch()  # type: ignore[no-untyped-call]
        for event in self._events(w, version, seconds):
            kind, obj = event.get("type"), event.get("object") or {}
            meta = obj.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            facts = _facts(obj)
            if facts is None:
                continue
            name, fact, info = facts
            with self._lock:
                old = self._nodes.get(name)
                if kind == "DELETED":
                    self._nodes.pop(name, None)
                    self._infos.pop(name, None)
                else:
                    self._nodes[name] = fact
                    if info is not None:
                        self._infos[name] = info
                    else:
                        self._infos.pop(name, None)
                new = self._nodes.get(name)
                if old != new:
                    self._place(name, new)
                    self._note_release(
                        {name: old} if old else {}, {name: new} if new else {}, only=name
                    )
                    self._sets = None
                self._as_of = self._now()
        with self._lock:
            self._as_of = self._now()  # the server ended the watch cleanly: all delivered
        return version

    def _events(self, w: watch.Watch, version: str, seconds: int) -> Iterator[dict[str, Any]]:
        # The events as JSON, not V1Node models. Not through deserialize=False: with it the
        # client fails on ERROR events (a 410 among them) with a KeyError; a function that
        # names no return type gets the JSON, and an ERROR event becomes an ApiException.
        def list_node(**kw: Any) -> Any:
            return self._core.list_node(**kw)

        try:
            yield from w.stream(  # type: ignore[no-untyped-call]
                list_node,
                resource_version=version,
                timeout_seconds=seconds,
                allow_watch_bookmarks=True,
                _request_timeout=(self._timeout, seconds + self._timeout),
            )
        except ApiException as exc:
            if exc.status == GONE:
                raise _Gone from exc
            raise

    def _note_release(
        self,
        before: Mapping[str, tuple[bool, bool]],
        after: Mapping[str, tuple[bool, bool]],
        *,
        only: str | None = None,
    ) -> None:
        """Count a slot freed: a cordoned GPU node uncordoned or gone, or a GPU node added.
        Called with the lock held."""
        names = [only] if only is not None else set(before) | set(after)
        freed = False
        for name in names:
            was, now = before.get(name), after.get(name)
            was_out = was is not None and was[0] and was[1]
            now_out = now is not None and now[0] and now[1]
            if now_out and not was_out:
                self._became[name] = self._became.get(name, 0) + 1
            joined = now is not None and now[0] and not (was is not None and was[0])
            if (was_out and not now_out) or joined:
                freed = True
        if freed and self._as_of is not None:
            self._released += 1
            if self._on_release is not None:
                self._on_release()

    def _place(self, name: str, fact: tuple[bool, bool] | None) -> None:
        """Put `name` in (or take it out of) the GPU and unschedulable sets, as `fact` says
        (None: the node is gone). Called with the lock held."""
        gpu, out = fact if fact is not None else (False, False)
        (self._gpu.add if gpu else self._gpu.discard)(name)
        (self._out.add if gpu and out else self._out.discard)(name)

    def _set_live(self, live: bool) -> None:
        with self._lock:
            if self._live != live:
                self._live = live
                self._sets = None


def _facts(node: Mapping[str, Any]) -> tuple[str, tuple[bool, bool], NodeInfo | None] | None:
    """(name, (has GPUs, unschedulable), NodeInfo) from a Node as the API server's JSON has
    it; the NodeInfo is None when a field does not read (such a node is read by a GET)."""
    name = (node.get("metadata") or {}).get("name")
    if not isinstance(name, str):
        return None
    try:
        info: NodeInfo | None = node_info_json(node)
    except (KeyError, TypeError, ValueError, AttributeError):
        info = None
    status = node.get("status") or {}
    try:
        gpus = gpu_devices(status.get("capacity"))
    except ValueError:
        gpus = 0
    return name, (gpus > 0, bool((node.get("spec") or {}).get("unschedulable"))), info

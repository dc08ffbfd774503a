"""NodeCache: the fleet's Nodes, kept by one LIST and a WATCH in a thread (a Reflector).

For what the blast-radius cap reads (which Nodes have GPUs and which of those are
unschedulable) and for node reads that may lag by the watch's latency (plans, and writes that
send the version they read back, so the API server refuses them if it moved). Readers get an
immutable FleetView, or one Node, in O(1); the reader of the view
(KubernetesKubeApi.gpu_fleet) lists instead when the watch has been broken for too long.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from gpubot.backends.kube.convert import gpu_devices, node_info_json
from gpubot.backends.kube.reflector import Reflector
from gpubot.domain.fleet.cluster import FleetView, NodeInfo

# What is kept of one Node: (name, (has GPUs, unschedulable), the Node converted).
_Facts = tuple[str, tuple[bool, bool], NodeInfo | None]


class NodeCache(Reflector[_Facts]):
    """GPU nodes and their `spec.unschedulable`, kept current by a watch (see module doc)."""

    kind = "node"

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
        super().__init__(
            core.list_node,
            resync_seconds=resync_seconds,
            watch_seconds=watch_seconds,
            request_timeout=request_timeout,
            now=now,
        )
        self._on_release = on_release
        self._nodes: dict[str, tuple[bool, bool]] = {}  # name → (has GPUs, unschedulable)
        # The GPU nodes, and those of them unschedulable, kept with every event: a view
        # copies them (in C) instead of walking every Node in Python.
        self._gpu: set[str] = set()
        self._out: set[str] = set()
        self._infos: dict[str, NodeInfo] = {}  # name → the Node as last seen, converted
        self._sets: tuple[frozenset[str], frozenset[str], dict[str, int]] | None = None
        self._released = 0
        self._became: dict[str, int] = {}  # GPU node → times seen becoming cordoned

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

    # -- what is kept (with the lock held) -------------------------------------------------

    def _digest(self, obj: Mapping[str, Any]) -> _Facts | None:
        return _facts(obj)

    def _replace(self, digests: Sequence[_Facts]) -> None:
        before = self._nodes
        self._nodes = {name: fact for name, fact, _ in digests}
        self._infos = {name: info for name, _, info in digests if info is not None}
        self._gpu = {n for n, (g, _) in self._nodes.items() if g}
        self._out = {n for n, (g, u) in self._nodes.items() if g and u}
        self._note_release(before, self._nodes)
        self._sets = None

    def _apply(self, event: str, digest: _Facts) -> None:
        name, fact, info = digest
        old = self._nodes.get(name)
        if event == "DELETED":
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
            self._note_release({name: old} if old else {}, {name: new} if new else {}, only=name)
            self._sets = None

    def _changed_liveness(self) -> None:
        self._sets = None

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


def _facts(node: Mapping[str, Any]) -> _Facts | None:
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

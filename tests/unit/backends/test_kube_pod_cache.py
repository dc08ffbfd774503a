"""PodCache on a fake CoreV1Api: only GPU pods bound to a node are kept, by node; each watch
event moves, adds or drops one; a 410 lists again; once the watch breaks, readers get None
and go to the server."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException

from gpubot.backends.kube.pod_cache import PodCache
from gpubot.backends.kube.reflector import _Gone

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def pod(name: str, *, node: str | None = "n1", gpus: int = 1, ns: str = "ml") -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": resources}]}
    if node is not None:
        spec["nodeName"] = node
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": spec,
        "status": {"phase": "Running"},
    }


class Raw:
    def __init__(self, body: dict[str, Any]) -> None:
        self.data = json.dumps(body).encode()


class FakeCore:
    """LIST answers the pods given; WATCH answers 410 `gone` times, then a connection error."""

    def __init__(self, lists: list[list[dict[str, Any]]], *, gone: int) -> None:
        self.lists = lists
        self.gone = gone
        self.listed = 0
        self.done = threading.Event()

    def list_pod_for_all_namespaces(self, **kw: Any) -> Any:
        if kw.get("watch"):
            if self.gone > 0:
                self.gone -= 1
                raise ApiException(status=410, reason="Expired")
            self.done.set()
            raise OSError("connection reset")
        items = self.lists[min(self.listed, len(self.lists) - 1)]
        self.listed += 1
        return Raw({"metadata": {"resourceVersion": str(self.listed)}, "items": items})


def names(cache: PodCache, node: str) -> set[str]:
    kept = cache.gpu_pods(node)
    assert kept is not None
    return {p.name for p in kept}


def test_only_gpu_pods_bound_to_a_node_are_kept() -> None:
    """A CPU pod, a pending GPU pod (no node yet), a pod without a name and one whose GPU
    count does not parse are left out; a GPU pod with a field that does not convert is kept
    with what the figures need."""
    odd = pod("odd", gpus=2)
    odd["status"]["containerStatuses"] = [
        {"name": "main", "lastState": {"terminated": {"exitCode": "x"}}}
    ]
    bad_count = pod("bad-count")
    bad_count["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "lots"
    nameless = pod("x")
    del nameless["metadata"]["name"]
    listed = [pod("llm"), pod("cpu", gpus=0), pod("pending", node=None), nameless, bad_count, odd]
    cache = PodCache(FakeCore([listed], gone=0), now=lambda: T0)  # type: ignore[arg-type]
    cache._list()
    assert names(cache, "n1") == {"llm", "odd"}
    kept = {p.name: p for p in cache.gpu_pods("n1") or []}
    assert (kept["odd"].gpu_request, kept["odd"].node, kept["odd"].phase) == (2, "n1", "Running")
    assert names(cache, "elsewhere") == set()


def test_a_gone_watch_lists_again_and_a_broken_watch_sends_readers_to_the_server() -> None:
    core = FakeCore([[pod("a")], [pod("b", node="n2")]], gone=1)
    cache = PodCache(core, now=lambda: T0)  # type: ignore[arg-type]
    cache.start()
    try:
        assert core.done.wait(10)
    finally:
        cache.stop()
    assert core.listed == 2  # the first LIST, and one after the 410
    assert not cache.live
    assert cache.gpu_pods("n2") is None  # the watch broke after: read from the server
    cache._set_live(True)
    assert names(cache, "n2") == {"b"}
    assert names(cache, "n1") == set()  # the second LIST replaced the first


class PagedCore:
    """LIST in pages as the API server pages a quorum LIST: `limit` items, a continue token
    while more are left, every page at the same version; the token `expired` answers 410."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.asked: list[dict[str, Any]] = []

    def list_pod_for_all_namespaces(self, **kw: Any) -> Any:
        self.asked.append(kw)
        if kw.get("_continue") == "expired":
            raise ApiException(status=410, reason="Expired")
        start = int(kw.get("_continue") or 0)
        end = start + kw["limit"]
        meta: dict[str, Any] = {"resourceVersion": "42"}
        if end < len(self.items):
            meta["continue"] = str(end)
        return Raw({"metadata": meta, "items": self.items[start:end]})


def test_a_large_cluster_is_listed_in_pages_at_one_version() -> None:
    """1,203 pods (every third a GPU pod) in pages of 500: three requests, none asking the
    watch cache (which would ignore the limit and send everything at once)."""
    items = [pod(f"p{i}", node=f"n{i % 7}", gpus=1 if i % 3 == 0 else 0) for i in range(1203)]
    core = PagedCore(items)
    cache = PodCache(core, now=lambda: T0)  # type: ignore[arg-type]
    assert cache._list() == "42"
    assert [a.get("_continue") for a in core.asked] == [None, "500", "1000"]
    assert {a["limit"] for a in core.asked} == {500}
    assert all("resource_version" not in a for a in core.asked)
    kept = sum(len(cache.gpu_pods(f"n{k}") or []) for k in range(7))
    assert kept == 401


def test_an_expired_continue_token_lists_again_from_the_start() -> None:
    """The server keeps a continue token for a few minutes: past that its 410 is the same
    as a watch's, and the cache lists again from the first page."""
    core = PagedCore([pod("a"), pod("b"), pod("c")])
    real = core.list_pod_for_all_namespaces

    def first_page_then_expired(**kw: Any) -> Any:
        answer = real(**kw)
        if kw.get("_continue") is None:
            answer.data = answer.data.replace(b'"continue": "2"', b'"continue": "expired"')
        return answer

    core.list_pod_for_all_namespaces = first_page_then_expired  # type: ignore[method-assign]
    cache = PodCache(core, now=lambda: T0)  # type: ignore[arg-type]
    cache.page_size = 2
    with pytest.raises(_Gone):
        cache._list()
    assert [a.get("_continue") for a in core.asked] == [None, "expired"]
    assert not cache.live  # nothing half-listed was kept


NODES = ("n1", "n2", None)
EVENTS = st.lists(
    st.tuples(
        st.sampled_from(("ADDED", "MODIFIED", "DELETED")),
        st.sampled_from(("p", "q", "r")),
        st.sampled_from(NODES),
        st.integers(0, 2),  # GPUs
    ),
    max_size=30,
)


@given(first=st.dictionaries(st.sampled_from(("p", "q")), st.sampled_from(NODES)), events=EVENTS)
@settings(max_examples=200, deadline=None)
def test_what_is_kept_after_any_events_is_what_the_pods_say(
    first: dict[str, str | None], events: list[tuple[str, str, str | None, int]]
) -> None:
    """Pods scheduled, moved (a delete and a re-create under the same name), losing or
    gaining GPUs, deleted: each node's GPU pods equal the ones read off every pod."""
    cache = PodCache(
        FakeCore([[pod(n, node=at) for n, at in first.items()]], gone=0), now=lambda: T0
    )  # type: ignore[arg-type]
    cache._list()
    truth: dict[str, tuple[str | None, int]] = {n: (at, 1) for n, at in first.items()}
    for kind, name, at, gpus in events:
        delivered = [{"type": kind, "object": pod(name, node=at, gpus=gpus)}]
        cache._events = lambda *_args, d=delivered: iter(d)  # type: ignore[method-assign]
        cache._follow("1", seconds=1)
        if kind == "DELETED":
            truth.pop(name, None)
        else:
            truth[name] = (at, gpus)
        for node in ("n1", "n2"):
            want = {n for n, (where, g) in truth.items() if where == node and g > 0}
            assert names(cache, node) == want

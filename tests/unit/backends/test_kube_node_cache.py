"""NodeCache on a fake CoreV1Api: a 410 on the watch makes it list again; a broken watch
stops the view being live, and the adapter then lists instead of serving a stale view."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException

from gpubot.backends.kube.node_cache import NodeCache

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def node(name: str, *, gpus: int = 8, cordoned: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"capacity": {"nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"}},
    }


class Raw:
    def __init__(self, body: dict[str, Any]) -> None:
        self.data = json.dumps(body).encode()


class FakeCore:
    """LIST answers the nodes given; WATCH answers 410 (the version is gone) `gone` times,
    then a connection error, and the test stops the cache."""

    def __init__(self, lists: list[list[dict[str, Any]]], *, gone: int) -> None:
        self.lists = lists
        self.gone = gone
        self.listed = 0
        self.watches = 0
        self.done = threading.Event()

    def list_node(self, **kw: Any) -> Any:
        """:return: V1NodeList"""
        if kw.get("watch"):
            self.watches += 1
            if self.gone > 0:
                self.gone -= 1
                raise ApiException(status=410, reason="Expired")
            self.done.set()
            raise OSError("connection reset")
        items = self.lists[min(self.listed, len(self.lists) - 1)]
        self.listed += 1
        return Raw({"metadata": {"resourceVersion": str(self.listed)}, "items": items})


def test_a_gone_watch_lists_again_and_counts_the_uncordon_it_missed() -> None:
    core = FakeCore(
        [[node("a", cordoned=True), node("b"), node("cpu", gpus=0)], [node("a"), node("b")]],
        gone=1,
    )
    released: list[int] = []
    cache = NodeCache(core, now=lambda: T0, on_release=lambda: released.append(1))  # type: ignore[arg-type]
    cache.start()
    try:
        assert core.done.wait(10)
    finally:
        cache.stop()
    assert core.listed == 2  # the first LIST, and one after the 410
    view = cache.view()
    assert view is not None
    assert view.gpu_nodes == {"a", "b"}
    assert view.cordoned == frozenset()
    assert view.released == 1
    assert released == [1]
    assert not view.live  # the watch broke after: the view stops at as_of
    assert view.as_of == T0


def test_the_cache_serves_each_node_while_live_and_none_once_the_watch_broke() -> None:
    """After the LIST, node() answers each Node converted (labels, taints, resourceVersion);
    a node whose fields do not read is left to a GET (None); once the watch breaks, every
    node() answers None so a reader goes to the server."""
    a = node("a")
    a["metadata"].update(resourceVersion="17", labels={"team": "ml"})
    a["spec"]["taints"] = [{"key": "gpubot.io/xid", "value": "79", "effect": "NoSchedule"}]
    broken = node("b")
    broken["spec"]["taints"] = [{"effect": "NoSchedule"}]  # no key: does not convert
    core = FakeCore([[a, broken]], gone=0)
    cache = NodeCache(core, now=lambda: T0)  # type: ignore[arg-type]
    cache._list()  # the LIST alone, in this thread: the watch is not started
    seen = cache.node("a")
    assert seen is not None
    assert seen.resource_version == "17"
    assert seen.labels == {"team": "ml"}
    assert [t.key for t in seen.taints] == ["gpubot.io/xid"]
    assert cache.node("b") is None
    assert cache.node("nope") is None
    view = cache.view()
    assert view is not None
    assert view.gpu_nodes == {"a", "b"}
    cache._set_live(False)
    assert cache.node("a") is None


NAMES = ("a", "b", "c", "d")
EVENTS = st.lists(
    st.tuples(
        st.sampled_from(("ADDED", "MODIFIED", "DELETED")),
        st.sampled_from(NAMES),
        st.booleans(),  # has GPUs
        st.booleans(),  # unschedulable
    ),
    max_size=30,
)


@given(
    first=st.lists(st.tuples(st.sampled_from(NAMES), st.booleans(), st.booleans())), events=EVENTS
)
@settings(max_examples=200, deadline=None)
def test_the_view_after_any_events_is_what_the_nodes_say(
    first: list[tuple[str, bool, bool]], events: list[tuple[str, str, bool, bool]]
) -> None:
    """The GPU and cordoned sets kept with each event equal the ones read off every Node
    the cache holds, after a LIST and after each watch event (added, modified, deleted;
    GPUs gained or lost; cordoned and uncordoned)."""
    listed = {name: node(name, gpus=8 if g else 0, cordoned=u) for name, g, u in first}
    cache = NodeCache(FakeCore([list(listed.values())], gone=0), now=lambda: T0)  # type: ignore[arg-type]
    cache._list()
    truth = {name: (g, u) for name, g, u in first}
    for kind, name, g, u in events:
        obj = node(name, gpus=8 if g else 0, cordoned=u)
        delivered = [{"type": kind, "object": obj}]
        cache._events = lambda *_args, d=delivered: iter(d)  # type: ignore[method-assign]
        cache._follow("1", seconds=1)
        if kind == "DELETED":
            truth.pop(name, None)
        else:
            truth[name] = (g, u)
        view = cache.view()
        assert view is not None
        assert view.gpu_nodes == {n for n, (gpu, _) in truth.items() if gpu}
        assert view.cordoned == {n for n, (gpu, out) in truth.items() if gpu and out}

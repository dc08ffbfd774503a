"""The simulated cluster's PromQL subset: the idle report's three queries, matchers,
aggregations, comparisons, *_over_time on a steady state, and one-line refusals."""

from __future__ import annotations

import math

import pytest

from gpubot.backends.simulated import SimulatedCluster, idle_pods
from gpubot.backends.simulated.promql import Row, evaluate, parse
from gpubot.domain.fleet.cluster import Sample
from gpubot.errors import InputError

# The idle report's queries (gpubot/reports), with its default window, threshold and lookback.
Q_UTIL = (
    "avg by (Hostname, gpu, modelName, namespace, pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))"
)
Q_MEM = "max by (Hostname, gpu, namespace, pod) (max_over_time(DCGM_FI_DEV_FB_USED[1h]))"
Q_IDLE = (
    "sum by (Hostname, gpu, namespace, pod) (count_over_time((DCGM_FI_DEV_GPU_UTIL < 5)[24h:5m]))"
)
GPUS = 16 * 8


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster.default()


async def readings(cluster: SimulatedCluster) -> dict[tuple[str, str], tuple[float, float]]:
    """(node, gpu index) -> (utilisation %, memory used MiB), read through the NodeAgent port."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for node in cluster.node_names():
        for gpu in await cluster.agent.gpus(node=node):
            out[(node, str(gpu.index))] = (gpu.utilization_pct, gpu.memory_used_mib)
    return out


def key(sample: Sample) -> tuple[str, str]:
    return sample.labels["Hostname"], sample.labels["gpu"]


async def test_report_queries_give_one_row_per_gpu_with_its_pod(cluster: SimulatedCluster) -> None:
    """Q_UTIL and Q_MEM give every GPU its current reading, with exactly the grouping labels;
    allocated GPUs carry pod and namespace, free ones carry neither (as the exporter's)."""
    truth = await readings(cluster)
    holders = {
        (p.node, str(i)): p for p in cluster.snapshot().pods for i in p.gpu_indices if p.node
    }
    util = await cluster.metrics.query(promql=Q_UTIL)
    mem = await cluster.metrics.query(promql=Q_MEM)
    assert len(util) == len(mem) == GPUS
    for sample in util:
        assert sample.value == truth[key(sample)][0]
        holder = holders.get(key(sample))
        expected = {"Hostname", "gpu", "modelName"} | ({"namespace", "pod"} if holder else set())
        assert set(sample.labels) == expected
        if holder:
            assert (sample.labels["namespace"], sample.labels["pod"]) == (
                holder.namespace,
                holder.name,
            )
    assert {key(s): s.value for s in mem} == {k: v[1] for k, v in truth.items()}
    assert any("pod" not in s.labels for s in util)  # the fleet has free GPUs
    assert any("pod" in s.labels for s in util)


async def test_idle_query_counts_the_lookback_for_gpus_below_threshold(
    cluster: SimulatedCluster,
) -> None:
    """Steady state: a GPU below 5 % has been so for all 288 five-minute points of 24 h; a busy
    GPU is absent. Pods made idle by the scenario show up with the full count."""
    truth = await readings(cluster)
    idle = await cluster.metrics.query(promql=Q_IDLE)
    assert {key(s) for s in idle} == {k for k, (u, _) in truth.items() if u < 5}
    assert {s.value for s in idle} == {288.0}
    assert all(truth[k][0] >= 5 for k in truth.keys() - {key(s) for s in idle})

    refs = idle_pods(cluster, namespace="inference", count=2)
    idle_pods_seen = {
        f"{s.labels['namespace']}/{s.labels['pod']}"
        for s in await cluster.metrics.query(promql=Q_IDLE)
        if "pod" in s.labels
    }
    assert set(refs) <= idle_pods_seen


async def test_matchers_equal_regex_and_negations(cluster: SimulatedCluster) -> None:
    """=, !=, =~ and !~ select as in PromQL: regexes are anchored, a missing label is ""."""

    async def count(selector: str) -> int:
        return len(await cluster.metrics.query(promql=f"DCGM_FI_DEV_GPU_UTIL{{{selector}}}"))

    assert await count('Hostname="gpu-node-03"') == 8
    assert await count('Hostname!="gpu-node-03"') == GPUS - 8
    assert await count('Hostname=~"gpu-node-0[1-4]"') == 32
    assert await count('Hostname=~"node-01"') == 0  # anchored: no partial match
    assert await count('Hostname!~"gpu-node-0.*"') == 7 * 8
    held = await count('pod!=""')
    assert 0 < held < GPUS
    assert await count('pod=""') + held == GPUS
    assert await count("pod!~'.+'") == GPUS - held
    assert await count('Hostname="gpu-node-03", gpu=~"[0-3]",') == 4


async def test_aggregations_by_and_without(cluster: SimulatedCluster) -> None:
    """sum/avg/max/min/count with by (…) before or after the argument, and without (…)."""
    truth = await readings(cluster)
    utils = [u for u, _ in truth.values()]
    [everything] = await cluster.metrics.query(promql="count(DCGM_FI_DEV_GPU_UTIL)")
    assert everything == Sample(labels={}, value=float(GPUS))
    [average] = await cluster.metrics.query(promql="avg(DCGM_FI_DEV_GPU_UTIL)")
    assert average.value == pytest.approx(sum(utils) / GPUS)
    [top] = await cluster.metrics.query(promql="max(DCGM_FI_DEV_GPU_UTIL)")
    [bottom] = await cluster.metrics.query(promql="min(DCGM_FI_DEV_GPU_UTIL)")
    assert (top.value, bottom.value) == (max(utils), min(utils))

    per_node = await cluster.metrics.query(promql="sum(DCGM_FI_DEV_GPU_UTIL) by (Hostname)")
    assert len(per_node) == 16
    node3 = next(s for s in per_node if s.labels == {"Hostname": "gpu-node-03"})
    assert node3.value == sum(u for (n, _), (u, _) in truth.items() if n == "gpu-node-03")

    # Free GPUs have no namespace: they form one group without the label.
    by_ns = await cluster.metrics.query(promql="count by (namespace) (DCGM_FI_DEV_GPU_UTIL)")
    assert sum(s.value for s in by_ns) == GPUS
    assert {} in [dict(s.labels) for s in by_ns]

    without = await cluster.metrics.query(
        promql="max without (gpu, UUID, pod, namespace, container) (DCGM_FI_DEV_GPU_TEMP)"
    )
    assert len(without) == 16
    assert set(without[0].labels) == {"Hostname", "modelName", "cluster"}  # no __name__


async def test_comparisons_filter_and_keep_the_series(cluster: SimulatedCluster) -> None:
    """`expr op N` keeps the samples that pass with their labels and values; none pass → []."""
    truth = await readings(cluster)
    busy = await cluster.metrics.query(promql="DCGM_FI_DEV_GPU_UTIL >= 50")
    assert {key(s) for s in busy} == {k for k, (u, _) in truth.items() if u >= 50}
    assert all(s.labels["__name__"] == "DCGM_FI_DEV_GPU_UTIL" for s in busy)
    assert await cluster.metrics.query(promql="DCGM_FI_DEV_GPU_UTIL < -1") == []
    band = await cluster.metrics.query(promql="(DCGM_FI_DEV_GPU_UTIL > 5) <= 50")
    assert {key(s) for s in band} == {k for k, (u, _) in truth.items() if 5 < u <= 50}
    for op, keep in (("==", 0), ("!=", 0)):
        got = await cluster.metrics.query(promql=f"DCGM_FI_DEV_XID_ERRORS {op} {keep}")
        assert len(got) == (GPUS if op == "==" else 0)


async def test_over_time_reads_the_steady_value(cluster: SimulatedCluster) -> None:
    """avg/max/min/last_over_time give the current value (last keeps the metric name);
    over a subquery, count is d/s points and sum is value x d/s (default step 1m)."""
    selector = 'DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-05", gpu="2"}'
    [now] = await cluster.metrics.query(promql=selector)
    for func in ("avg", "max", "min"):
        [s] = await cluster.metrics.query(promql=f"{func}_over_time({selector}[10m])")
        assert s.value == now.value
        assert "__name__" not in s.labels
    [last] = await cluster.metrics.query(promql=f"last_over_time({selector}[1h30m])")
    assert last == now
    [count] = await cluster.metrics.query(promql=f"count_over_time(({selector})[1h:])")
    [total] = await cluster.metrics.query(promql=f"sum_over_time({selector}[2h:30m])")
    assert (count.value, total.value) == (60.0, 4 * now.value)
    [nested] = await cluster.metrics.query(promql=f"max_over_time(avg({selector})[1d:1h])")
    assert nested.value == now.value


def test_evaluation_reads_each_selector_once_and_handles_nan() -> None:
    """One pass over the series per selector (the fleet may be 10,000 GPUs); max/min skip NaN
    as Prometheus does."""
    calls: list[str] = []
    rows = [({"__name__": "M", "g": str(i)}, v) for i, v in enumerate([1.0, math.nan, 3.0])]

    def source(metric: str) -> list[Row]:
        calls.append(metric)
        return [(dict(labels), value) for labels, value in rows]

    expr = parse("max(max_over_time(M[5m]))", metrics={"M"})
    assert evaluate(expr, source) == [Sample(labels={}, value=3.0)]
    assert calls == ["M"]
    assert evaluate(parse("min(M)", metrics={"M"}), source)[0].value == 1.0
    assert evaluate(parse("count(M > 2)", metrics={"M"}), source)[0].value == 1.0


@pytest.mark.parametrize(
    ("promql", "problem"),
    [
        ("", "empty query"),
        ("up", "unknown metric 'up'"),
        ("topk(3, DCGM_FI_DEV_GPU_UTIL)", "topk"),
        ("DCGM_FI_DEV_GPU_UTIL + 1", "unexpected '+'"),
        ("DCGM_FI_DEV_GPU_UTIL < bool 5", "bool modifier"),
        ("DCGM_FI_DEV_GPU_UTIL > DCGM_FI_DEV_GPU_TEMP", "expected a number"),
        ('DCGM_FI_DEV_GPU_UTIL{pod~"x"}', "unexpected '~'"),
        ('DCGM_FI_DEV_GPU_UTIL{pod=~"("}', "bad regex"),
        ("DCGM_FI_DEV_GPU_UTIL{pod=x}", "expected a quoted value"),
        ("DCGM_FI_DEV_GPU_UTIL[5m]", "needs an F_over_time"),
        ("avg_over_time(DCGM_FI_DEV_GPU_UTIL)", "needs a range"),
        ("avg_over_time(DCGM_FI_DEV_GPU_UTIL[5])", "expected a duration"),
        ("count_over_time(DCGM_FI_DEV_GPU_UTIL[1h])", "needs a subquery"),
        ("stddev_over_time(DCGM_FI_DEV_GPU_UTIL[1h])", "unsupported function"),
        ("avg_over_time((DCGM_FI_DEV_GPU_UTIL < 5)[1h])", "only a selector takes a range"),
        ("count_over_time((DCGM_FI_DEV_GPU_UTIL)[1h:0s])", "step must be positive"),
        ("sum by (gpu) (DCGM_FI_DEV_GPU_UTIL) by (Hostname)", "second by/without"),
        ("sum(DCGM_FI_DEV_GPU_UTIL", "unexpected end of query"),
        ("DCGM_FI_DEV_GPU_UTIL\n# comment", "unexpected '#'"),
    ],
)
async def test_unsupported_promql_is_one_clear_line(
    cluster: SimulatedCluster, promql: str, problem: str
) -> None:
    """Anything outside the subset is refused with one line naming the problem and the query."""
    with pytest.raises(InputError, match="simulated metrics support only") as caught:
        await cluster.metrics.query(promql=promql)
    message = str(caught.value)
    assert problem in message
    assert "\n" not in message
    assert repr(promql) in message

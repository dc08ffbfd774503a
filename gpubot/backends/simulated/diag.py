"""DCGM diagnostics on a simulated node: every test passes unless a scenario said otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from gpubot.backends.simulated.state import ClusterState
from gpubot.errors import InputError, NotFoundError, PermanentStepError
from gpubot.knowledge.dcgm_diag import LEVELS, DiagReport, TestResult

SIM_DCGM_VERSION = "4.2.3 (simulated)"
# The plugins each level runs, by DCGM 4's names (dcgmi diag -r 1|2|3).
LEVEL_TESTS: dict[int, tuple[tuple[str, str], ...]] = {
    1: (("Deployment", "software"),),
    2: (("Deployment", "software"), ("Integration", "pcie"), ("Hardware", "memory")),
    3: (
        ("Deployment", "software"),
        ("Integration", "pcie"),
        ("Hardware", "memory"),
        ("Hardware", "diagnostic"),
        ("Stress", "targeted_stress"),
        ("Stress", "targeted_power"),
        ("Stress", "memory_bandwidth"),
    ),
}


def simulated_diag(
    state: ClusterState, *, node: str, level: int, gpus: Sequence[int] = ()
) -> DiagReport:
    """What `dcgmi diag -r LEVEL` would report on `node`: refused while a pod holds a GPU it
    tests; a failure a scenario set (scenarios.fail_diag) shows at any level."""
    if level not in LEVELS:
        raise InputError(f"diagnostic level must be 1, 2 or 3, not {level}")
    sim_node = state.node(node)
    if sim_node.dcgm_unavailable:
        raise PermanentStepError(f"DCGM cannot run on {node}: {sim_node.dcgm_unavailable}")
    chosen = tuple(sorted(set(gpus)))
    for index in chosen:
        if not 0 <= index < len(sim_node.gpus):
            raise NotFoundError(f"{node} has no GPU {index}")
    tested = list(chosen) or [g.index for g in sim_node.gpus]
    held = [f"GPU {i}: {pod.ref}" for i in tested if (pod := state.holder(node, i)) is not None]
    if held:
        raise PermanentStepError(
            f"refusing DCGM diagnostics on {node} while pods hold the GPUs it would test "
            f"({', '.join(held[:5])}); drain the node first"
        )
    results: list[TestResult] = []
    for index in tested:
        injected = dict(sim_node.diag_failures.get(str(index), {}))
        lost = sim_node.gpu(index).lost
        names = [t for _, t in LEVEL_TESTS[level]]
        extra = [("Hardware", t) for t in injected if t not in names]
        for category, test in (*LEVEL_TESTS[level], *extra):
            if test in injected:
                results.append(TestResult(test, "fail", index, category, (injected[test],)))
            elif lost:
                message = f"GPU {index} is not reachable: it has fallen off the bus (NVML)"
                results.append(TestResult(test, "fail", index, category, (message,)))
            else:
                results.append(TestResult(test, "pass", index, category))
    return DiagReport(
        level=level, results=tuple(results), version=SIM_DCGM_VERSION, gpus_asked=chosen
    )

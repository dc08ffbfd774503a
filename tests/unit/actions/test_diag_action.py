"""gpu.diag: its parameters, the configured default level, level 0 (off) and its output."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpubot.actions.base import ActionContext
from gpubot.actions.diag import Diagnose, DiagParams, failed_text, output, specs
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import fail_diag
from gpubot.engine.clock import FakeClock
from gpubot.engine.registry import builtin_registry
from gpubot.errors import PermanentStepError
from gpubot.knowledge.dcgm_diag import DiagReport, TestResult

NODE = "gpu-node-03"


def ctx_for(cluster: SimulatedCluster) -> ActionContext:
    ports = cluster.ports()
    return ActionContext(cluster=ports, clock=FakeClock(), actor="system", reason="test")


def drained(cluster: SimulatedCluster) -> SimulatedCluster:
    with cluster.mutation() as state:
        state.pods = [p for p in state.pods if p.node != NODE]
    return cluster


@pytest.mark.parametrize(
    ("raw", "gpus"),
    [("", []), (None, []), (3, [3]), ("3", [3]), ("0,3", [0, 3]), ([3, 0, 3], [0, 3])],
)
def test_gpus_from_a_runbook(raw: Any, gpus: list[int]) -> None:
    assert DiagParams.model_validate({"node": NODE, "gpus": raw}).gpus == gpus


@pytest.mark.parametrize(
    "args",
    [
        {"node": NODE, "level": 4},
        {"node": NODE, "level": -1},
        {"node": NODE, "gpus": "a"},
        {"node": NODE, "gpus": [64]},
        {"node": "Bad Node"},
        {"node": NODE, "extra": 1},
    ],
)
def test_bad_params_are_refused(args: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DiagParams.model_validate(args)


def test_the_registry_carries_the_configured_level() -> None:
    spec = builtin_registry(diag_level=3).get("gpu.diag")
    assert spec.mutating is False
    assert spec.plan.__self__.default_level == 3  # type: ignore[attr-defined]


async def test_level_zero_is_off_and_passes_without_running() -> None:
    cluster = SimulatedCluster.default()  # GPUs held: a real run would be refused
    spec = specs(0)[0]
    params = DiagParams(node=NODE)
    note = await spec.plan(ctx_for(cluster), params)
    assert note.changes is False
    out = await spec.run(ctx_for(cluster), params)
    assert out["passed"] is True
    assert out["ran"] is False
    assert "off" in out["summary"]
    assert spec.outputs is not None
    assert set(out) == set(spec.outputs)  # what a runbook may read is what it gets


async def test_run_reports_the_failing_test_with_dcgms_message() -> None:
    cluster = drained(SimulatedCluster.default())
    fail_diag(cluster, node=NODE, gpu=2, test="memory", message="DBE on GPU 2")
    d = Diagnose(2)
    out = await d.run(ctx_for(cluster), DiagParams(node=NODE))
    assert out["level"] == 2
    assert set(out) == set(specs(2)[0].outputs or {})
    assert out["passed"] is False
    assert out["failed_tests"] == [{"test": "memory", "gpu": 2, "messages": ["DBE on GPU 2"]}]
    assert out["failed_text"] == "memory on GPU 2: DBE on GPU 2"
    assert {g["gpu"]: g["status"] for g in out["gpus"]}[2] == "fail"
    passing = await d.run(ctx_for(cluster), DiagParams(node=NODE, gpus=[1], level=3))
    assert passing["passed"] is True
    assert passing["summary"].startswith("DCGM diagnostics level 3 passed: 7 test(s)")


async def test_refused_while_pods_hold_the_gpus() -> None:
    with pytest.raises(PermanentStepError, match="drain the node first"):
        await Diagnose(1).run(ctx_for(SimulatedCluster.default()), DiagParams(node="gpu-node-12"))


def test_failed_text_lists_a_runtime_error_and_caps_the_list() -> None:
    fails = tuple(TestResult(f"t{i}", "fail", i, "Hardware", ("bad",)) for i in range(8))
    report = DiagReport(level=3, results=fails, runtime_error="NVVS crashed")
    lines = failed_text(report).splitlines()
    assert lines[0] == "DCGM could not run the tests: NVVS crashed"
    assert lines[-1] == "… and 2 more"
    assert output(NODE, report)["passed"] is False

"""`/gpu` text parsed into typed commands; anything else is a usage error."""

from __future__ import annotations

import pytest

from gpubot.slack.commands import (
    Audit,
    Help,
    Idle,
    Incidents,
    PlanCmd,
    RunCmd,
    Show,
    Status,
    UsageError,
    Xid,
    parse,
)

KNOWN = {"clusters": {"sim", "prod"}, "runbooks": {"xid79"}, "default_cluster": "sim"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Help()),
        ("help", Help()),
        ("status", Status("sim")),
        ("status prod", Status("prod")),
        ("status prod gpu-node-01", Status("prod", "gpu-node-01")),
        ("status gpu-node-01", Status("sim", "gpu-node-01")),
        ("incidents", Incidents("open")),
        ("incidents all", Incidents("all")),
        ("show inc-0123456789", Show("inc-0123456789")),
        ("audit inc-0123456789", Audit("inc-0123456789")),
        ("plan xid79 node=gpu-node-07", PlanCmd("xid79", "sim", {"node": "gpu-node-07"})),
        (
            "run xid79 node=gpu-node-07 cluster=prod --dry-run",
            RunCmd("xid79", "prod", {"node": "gpu-node-07"}, dry_run=True),
        ),
        ("run xid79 node=gpu-node-07", RunCmd("xid79", "sim", {"node": "gpu-node-07"})),
        ("xid 79", Xid(79)),
        ("idle", Idle()),
        ("idle ml-team", Idle("ml-team")),
    ],
)
def test_parses(text: str, expected: object) -> None:
    assert parse(text, **KNOWN) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("reboot everything", "unknown command"),
        ("status nowhere gpu-node-01", "unknown cluster"),
        ("status Gpu_Node", "not a valid Kubernetes node name"),
        ("incidents some", "usage"),
        ("show 123", "usage"),
        ("plan", "usage"),
        ("plan rm-rf node=a", "unknown runbook"),
        ("run xid79 node=$(reboot)", "expected key=value"),
        ("run xid79 node=gpu;rm", "expected key=value"),
        ("run xid79 node=UPPER", "not a valid Kubernetes node name"),
        ("run xid79 cluster=mars", "unknown cluster"),
        ("run xid79 node=a node=b", "given twice"),
        ("run xid79 node", "expected key=value"),
        ("xid seventy", "usage"),
        ("idle Bad_NS", "not a valid Kubernetes namespace"),
    ],
)
def test_refuses(text: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason):
        parse(text, **KNOWN)  # type: ignore[arg-type]


def test_triage_is_the_oom_triage_runbook_on_one_pod() -> None:
    """`/gpu triage ns/pod` starts the read-only oom-triage runbook with validated names."""
    known = {**KNOWN, "runbooks": {"xid79", "oom-triage"}}
    assert parse("triage ml-train/trainer-0", **known) == RunCmd(
        "oom-triage", "sim", {"namespace": "ml-train", "pod": "trainer-0"}
    )
    for bad in ("triage", "triage trainer-0", "triage ML/x", "triage a/b/c", "triage ns/$(rm)"):
        with pytest.raises(UsageError):
            parse(bad, **known)
    with pytest.raises(UsageError, match="not loaded"):
        parse("triage ml-train/trainer-0", **KNOWN)


SLURM = {
    "clusters": {"sim", "hpc"},
    "runbooks": {"xid79", "slurm-oom-triage"},
    "default_cluster": "hpc",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("triage job 4711", RunCmd("slurm-oom-triage", "hpc", {"job": "4711"})),
        ("triage job 4711 sim", RunCmd("slurm-oom-triage", "sim", {"job": "4711"})),
        ("plan xid79 node=gpu042", PlanCmd("xid79", "hpc", {"node": "gpu042"})),
    ],
)
def test_slurm_jobs_and_nodes(text: str, expected: object) -> None:
    assert parse(text, **SLURM) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    ["triage job", "triage job 12;rm", "triage job 4711 nowhere", "triage job 1 2 3"],
)
def test_slurm_job_usage(text: str) -> None:
    with pytest.raises(UsageError):
        parse(text, **SLURM)  # type: ignore[arg-type]

"""Idle GPUs on Slurm: the DCGM exporter's HPC job mapping (`hpc_job`) names the job that
holds a GPU; the report shows it with its user and totals it by its account."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.fleet.cluster import PodInfo, Sample
from gpubot.reports.idle import IdleQueries, Pricing, build_idle_report

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
H100 = "NVIDIA H100 80GB HBM3"
Q = IdleQueries.build(
    window=timedelta(hours=1),
    threshold_pct=5,
    lookback=timedelta(hours=24),
    step=timedelta(minutes=5),
)


def series(node: str, idx: int, value: float, job: str = "") -> Sample:
    labels = {"Hostname": node, "gpu": str(idx), "modelName": H100}
    if job:
        labels["hpc_job"] = job
    return Sample(labels, value)


def job(number: str, *, user: str, account: str) -> PodInfo:
    """A running job as the Slurm adapter lists it."""
    return PodInfo(
        namespace="slurm",
        name=number,
        node="gpu042",
        gpu_request=2,
        owner_kind="SlurmJob",
        owner_name=number,
        labels={
            "slurm.schedmd.com/user": user,
            "slurm.schedmd.com/account": account,
            "slurm.schedmd.com/partition": "gpu",
        },
        created_at=NOW - timedelta(hours=10),
    )


def test_idle_jobs_by_user_and_account() -> None:
    util = [
        series("gpu042", 0, 0.5, "4711"),
        series("gpu042", 1, 1.0, "4711"),
        series("gpu042", 2, 93.0, "4712"),  # busy
        series("gpu042", 3, 0.0),  # no job: free, not wasted
        series("gpu043", 0, 2.0, "4713; rm -rf /"),  # not a job id: no holder
    ]
    points = [
        Sample({"Hostname": "gpu042", "gpu": "0", "hpc_job": "4711"}, 120),
        Sample({"Hostname": "gpu042", "gpu": "1", "hpc_job": "4711"}, 120),
    ]
    report = build_idle_report(
        cluster="hpc",
        now=NOW,
        queries=Q,
        window=timedelta(hours=1),
        lookback=timedelta(hours=24),
        threshold_pct=5,
        util=util,
        memory=[Sample({"Hostname": "gpu042", "gpu": "0", "hpc_job": "4711"}, 512)],
        idle_points=points,
        pods=[job("4711", user="ada", account="physics"), job("4712", user="bo", account="bio")],
        pricing=Pricing({"H100": 12.0}),
    )
    [idle] = report.idle
    assert idle.pod == "4711"
    assert idle.namespace == "physics"  # totalled by account
    assert idle.owner == "job 4711 (user ada)"
    assert idle.gpus == ("0", "1")
    assert idle.idle_gpu_hours == 20.0  # 10 h each: the job's age caps the 24 h lookback
    assert idle.memory_used_mib == 512
    [total] = report.namespaces
    assert (total.namespace, total.gpus) == ("physics", 2)
    assert report.allocated_gpus == 3

"""Real Slurm once per session (munged, slurmctld, two slurmd), reset between tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slurm_cluster import SlurmCluster, start

from gpubot.backends.slurm import SlurmCommands, SlurmKubeApi
from gpubot.backends.slurm.joblog import JobOutput


@pytest.fixture(scope="session")
def slurm_daemons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    cluster = start(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def slurm(slurm_daemons: SlurmCluster) -> Iterator[SlurmCluster]:
    """The cluster with no jobs and every node idle, before and after the test."""
    slurm_daemons.reset()
    yield slurm_daemons
    slurm_daemons.reset()


@pytest.fixture
def api(slurm: SlurmCluster) -> SlurmKubeApi:
    return SlurmKubeApi(
        SlurmCommands(conf=slurm.conf, timeout_seconds=20),
        job_output=JobOutput(roots=(slurm.root / "out",)),
    )

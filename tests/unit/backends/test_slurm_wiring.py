"""Wiring: `backend: slurm` builds the Slurm adapter from its section, or says what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpubot.backends.slurm import SlurmKubeApi
from gpubot.config import load_settings
from gpubot.errors import ConfigError
from gpubot.wiring import build_clusters


def _build(**cluster: Any) -> Any:
    settings = load_settings(None, clusters=[{"name": "hpc", "backend": "slurm", **cluster}])
    return build_clusters(settings)["hpc"]


def test_slurm_cluster_from_its_section(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=hpc\n")
    ports = _build(
        agent={"port": 9400},
        slurm={
            "conf": str(conf),
            "drain_jobs": "requeue_or_cancel",
            "reboot_next_state": "resume",
            "output_roots": [str(tmp_path)],
        },
    )
    kube = ports.kube
    assert isinstance(kube, SlurmKubeApi)
    assert kube.cmd.conf == conf
    assert kube.drain_jobs == "requeue_or_cancel"
    assert kube.reboot_next_state == "resume"
    assert kube.job_output.roots == (tmp_path,)


def test_slurm_defaults() -> None:
    kube = _build(agent={"port": 9400}).kube
    assert kube.drain_jobs == "requeue"
    assert kube.reboot_next_state == "down"
    assert kube.job_output.roots == ()


@pytest.mark.parametrize(
    ("cluster", "says"),
    [
        ({}, "a slurm cluster needs agent"),
        ({"agent": {"address": "agent_pod"}}, "no agent pods"),
        ({"agent": {}, "slurm": {"conf": "/nonexistent/slurm.conf"}}, "is not a file"),
    ],
)
def test_what_is_missing_is_one_line(cluster: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        _build(**cluster)

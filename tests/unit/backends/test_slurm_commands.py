"""How the Slurm commands' failures read: unreachable controller (retry later), unknown job or
node (not found), anything else (permanent), a hang (timeout), each one line."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gpubot.backends.slurm import SlurmCommands, SlurmKubeApi
from gpubot.errors import NotFoundError, PermanentStepError, TemporaryStepError


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    return tmp_path


async def test_controller_down_is_temporary(bin_dir: Path) -> None:
    _stub(
        bin_dir,
        "sinfo",
        "echo 'sinfo: error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
    )
    api = SlurmKubeApi(SlurmCommands(bin_dir=bin_dir))
    with pytest.raises(TemporaryStepError, match="Unable to contact slurm controller"):
        await api.list_nodes()


async def test_unknown_job_is_not_found(bin_dir: Path) -> None:
    _stub(bin_dir, "scontrol", "echo 'Invalid job id specified for job 42' >&2; exit 1")
    api = SlurmKubeApi(SlurmCommands(bin_dir=bin_dir))
    await api.evict(namespace="slurm", name="42")  # ended meanwhile: nothing to do
    _stub(bin_dir, "squeue", """echo '{"jobs": []}'""")
    _stub(bin_dir, "sacct", "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1")
    with pytest.raises(NotFoundError, match="not in the queue"):
        await api.get_pod(namespace="slurm", name="42")


async def test_other_failures_are_permanent_and_one_line(bin_dir: Path) -> None:
    _stub(
        bin_dir,
        "scancel",
        "printf 'scancel: error: Access/permission denied\\nmore\\n' >&2; exit 1",
    )
    api = SlurmKubeApi(SlurmCommands(bin_dir=bin_dir))
    with pytest.raises(PermanentStepError) as caught:
        await api.delete_pod(namespace="slurm", name="42", grace_seconds=None)
    assert "\n" not in str(caught.value)
    assert "Access/permission denied" in str(caught.value)


async def test_a_hung_command_times_out(bin_dir: Path) -> None:
    _stub(bin_dir, "squeue", "exec sleep 30")
    api = SlurmKubeApi(SlurmCommands(bin_dir=bin_dir, timeout_seconds=0.3))
    with pytest.raises(TemporaryStepError, match="did not answer"):
        await api.list_pods()


async def test_missing_commands_and_bad_json(bin_dir: Path) -> None:
    api = SlurmKubeApi(SlurmCommands(bin_dir=bin_dir / "nowhere"))
    with pytest.raises(PermanentStepError, match="not installed"):
        await api.list_nodes()
    _stub(bin_dir, "sinfo", "echo '<html>'")
    with pytest.raises(PermanentStepError, match="printed no JSON"):
        await SlurmKubeApi(SlurmCommands(bin_dir=bin_dir)).list_nodes()
    _stub(bin_dir, "sinfo", """echo '{"errors": [{"error": "Unable to query"}], "nodes": []}'""")
    with pytest.raises(PermanentStepError, match="Unable to query"):
        await SlurmKubeApi(SlurmCommands(bin_dir=bin_dir)).list_nodes()
    _stub(bin_dir, "sinfo", """echo '{"nodes": [{"state": "idle"}]}'""")
    with pytest.raises(PermanentStepError, match="unexpected shape"):
        await SlurmKubeApi(SlurmCommands(bin_dir=bin_dir)).list_nodes()


NODE_JSON = (
    """echo '{"nodes": [{"name": "gpu042", "state": "mixed", "state_flags": ["DRAIN"], """
    """"reason": "gpubot xid79/cordon run=r-1", "gres": "gpu:8"}]}'"""
)


async def test_dry_run_reads_and_never_writes(bin_dir: Path) -> None:
    """`dry_run: true` in config: reads go to Slurm, no scontrol or scancel ever runs."""
    _stub(bin_dir, "sinfo", NODE_JSON)
    for command in ("scontrol", "scancel"):
        _stub(bin_dir, command, "echo 'must not run' >&2; exit 1")
    api = SlurmKubeApi(SlurmCommands(bin_dir=bin_dir), dry_run=True)
    node = await api.get_node(node="gpu042")
    assert node.draining
    await api.set_unschedulable(node="gpu042", value=False, actor="U1", reason="gpubot x")
    await api.evict(namespace="slurm", name="42")
    await api.delete_pod(namespace="slurm", name="42", grace_seconds=None)
    await api.set_node_metadata(node="gpu042", labels={"gpubot.io/reboot-required": "true"})

"""The Slurm backend: the cluster's ports over the Slurm commands (sinfo/squeue --json)."""

from gpubot.backends.slurm.api import SlurmKubeApi
from gpubot.backends.slurm.commands import SlurmCommands

__all__ = ["SlurmCommands", "SlurmKubeApi"]

"""Families of evidence, by what ran out: the GPU's memory, /dev/shm, the host's memory.

A family is the many wordings of one failure, with its class and confidence; the verdict
tries GPU_OOM, then SHM, then HOST (gpubot.knowledge.oom.verdict). Each tuple gathers the
families of its class from the modules that hold them by source: the frameworks' own
messages here, libraries, stacks, reporters, other languages, people's words.
"""

from __future__ import annotations

from gpubot.knowledge.oom.gpu_families import GPU_OOM
from gpubot.knowledge.oom.host_families import HOST
from gpubot.knowledge.oom.shm_families import SHM

__all__ = ["GPU_OOM", "HOST", "SHM"]

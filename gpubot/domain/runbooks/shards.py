"""Which shard a run belongs to when replicas split the execution of steps between them.

Every run on one node lands in the same shard, so the rules that hold per node (one run at a
time, the attempt caps) are applied by one replica. A run with no node is keyed by its
incident, or by itself.
"""

from __future__ import annotations

import hashlib

from gpubot.domain.runbooks.runs import Run


def run_key(run: Run) -> str:
    """What the run is sharded by: its cluster and node (its incident, or itself, without one)."""
    return f"{run.cluster}/{run.target or run.incident_id or run.id}"


def shard_of(key: str, shards: int) -> int:
    """The shard of `key` among `shards`: a stable hash, the same in every replica and release
    (not Python's `hash`, which is salted per process)."""
    if shards <= 1:
        return 0
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards

"""node.drain's opt-in delete-after-timeout: pods a PDB still protects are deleted only when
the runbook says so, and only after the configured time (fake clock)."""

from __future__ import annotations

from typing import Any

import pytest

MakeHarness = Any  # the `harness` fixture in conftest.py

DRAIN = """
name: drain
triggers: [{command: drain}]
params: {node: {type: node}}
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
  - id: drain
    action: node.drain
    args: {node: "{{ params.node }}"%s}
    approval: auto
    timeout: 10m
"""


def _block_every_pdb(h: Any) -> None:
    with h.cluster.mutation() as state:
        for pdb in state.pdbs:
            pdb.min_available = 1000  # no disruption allowed


@pytest.mark.parametrize("option", ["", ", delete_after_seconds: 60"])
async def test_pdb_blocked_pods_are_deleted_only_when_the_runbook_opts_in(
    harness: MakeHarness, option: str
) -> None:
    h = harness(DRAIN % option)
    _block_every_pdb(h)
    _plan, run = await h.service.start_command_run(
        runbook="drain", args={"node": "gpu-node-07"}, requested_by="U1", cluster="sim"
    )
    assert run is not None
    await h.service.wait_idle()
    [_, drain] = await h.store.steps(run.id)
    left = [p for p in await h.cluster.kube.list_pods(node="gpu-node-07") if not p.is_daemonset]
    if option:
        assert drain.status.value == "succeeded"
        assert drain.output["deleted"]
        assert left == []
        assert sum(h.clock.slept) >= 60  # it waited for the budget first
        assert "as the runbook allows" in h.notifier.text()
    else:
        assert drain.status.value == "failed"
        assert "blocked by PDB" in drain.error or "PDB" in drain.error
        assert left  # the budget was respected to the end

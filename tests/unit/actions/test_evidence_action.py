"""node.gather_evidence on the simulated cluster: the bundle and its ledger part, what a crash
mid-step finds (check), hostile parameters, and no store."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gpubot.actions.base import ActionContext
from gpubot.actions.evidence import EvidenceParams, check, plan, run
from gpubot.backends.simulated import SimulatedCluster
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import SqlStore, open_store
from gpubot.engine.clock import FakeClock
from gpubot.errors import PermanentStepError

NODE = "gpu-node-07"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    s = open_store(f"sqlite:///{tmp_path / 'evidence.db'}")
    yield s
    await s.close()


def ctx(sim: SimulatedCluster, store: SqlStore | None, **over: Any) -> ActionContext:
    fields: dict[str, Any] = {
        "cluster": sim.ports(),
        "clock": FakeClock(),
        "actor": "system",
        "reason": "gpubot xid79/evidence run=run-00000000a1 incident=inc-00000000a1",
        "ledger": store,
        "evidence": store,
        "incident_id": "inc-00000000a1",
        "run_id": "run-00000000a1",
        "step_id": "evidence",
    }
    return ActionContext(**{**fields, **over})


async def test_the_bundle_holds_every_part_and_the_ledger(store: SqlStore) -> None:
    sim = SimulatedCluster.default()
    inject_xid(sim, node=NODE, gpu=3)
    await store.record_gpu_event(
        uuid="GPU-" + "a" * 32, node=NODE, kind="xid", at=FakeClock().now(), xid=79
    )
    p = EvidenceParams(node=NODE, why="before the reset")
    note = await plan(ctx(sim, store), p)
    assert "nvidia-bug-report.sh" in note.summary
    assert "Changes nothing" in note.summary
    out = await run(ctx(sim, store), p)
    assert out["complete"] is True
    assert set(out["parts"]) == {
        "nvidia-bug-report.log.gz",
        "nvidia-smi-q.xml",
        "kernel-nvrm.log",
        "gpu-ledger.json",
    }
    meta, content = await store.evidence_content(out["evidence_id"])
    assert (meta.incident_id, meta.run_id, meta.step) == (
        "inc-00000000a1",
        "run-00000000a1",
        "evidence",
    )
    with tarfile.open(fileobj=io.BytesIO(content)) as tar:
        ledger = json.load(tar.extractfile("gpu-ledger.json"))  # type: ignore[arg-type]
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
    assert [e["xid"] for e in ledger] == [79]
    assert manifest["why"] == "before the reset"


async def test_after_a_crash_check_finds_the_bundle_this_step_kept(store: SqlStore) -> None:
    sim = SimulatedCluster.default()
    p = EvidenceParams(node=NODE)
    assert (await check(ctx(sim, store), p)).state == "not_done"
    out = await run(ctx(sim, store), p)
    found = await check(ctx(sim, store), p)
    assert found.state == "done"
    assert found.output["evidence_id"] == out["evidence_id"]
    assert found.output == out
    # Another step of the run (or another run) did not keep this one.
    assert (await check(ctx(sim, store, step_id="evidence-2"), p)).state == "not_done"
    assert (await check(ctx(sim, store, run_id="run-00000000b2"), p)).state == "not_done"


async def test_without_a_store_nothing_is_gathered() -> None:
    sim = SimulatedCluster.default()
    with pytest.raises(PermanentStepError, match="no store"):
        await run(ctx(sim, None), EvidenceParams(node=NODE))


@pytest.mark.parametrize(
    "args",
    [
        {"node": "gpu-node-07; rm -rf /"},
        {"node": "../../etc"},
        {"node": NODE, "why": "x" * 201},
        {"node": NODE, "argv": ["sh"]},
    ],
)
def test_hostile_parameters_are_refused(args: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EvidenceParams.model_validate(args)

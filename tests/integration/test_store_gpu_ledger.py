"""The per-GPU health ledger on a SQLite file and real PostgreSQL: order, restarts, replicas."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from gpubot.errors import InputError

if TYPE_CHECKING:
    from tests.integration.conftest import Database

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
GPU_A = "GPU-9d33a01c-353c-631c-dfd4-3f371200339d"
GPU_B = "GPU-000f49c8-1a35-8ca0-0d75-985d99c94309"


async def test_events_read_back_in_append_order_with_every_field(database: Database) -> None:
    """Rows come back oldest first with monotonic ids, each field as written (the bus id in
    canonical form, the time in UTC); one GPU's history holds only that GPU's rows."""
    store = database.open()
    await store.record_gpu_event(
        uuid=GPU_A,
        node="gpu-node-07",
        kind="xid",
        at=T0,
        pci_bus_id="00000000:3B:00.0",
        gpu_index=3,
        xid=79,
        incident_id="inc-0000000001",
        run_id="run-0000000001",
    )
    await store.record_gpu_event(uuid=GPU_B, node="gpu-node-07", kind="xid", at=T0, xid=13)
    await store.record_gpu_event(
        uuid=GPU_A,
        node="gpu-node-07",
        kind="reset",
        at=T0 + timedelta(minutes=5),
        gpu_index=3,
        xid=79,
        result="ok",
        actor="U1",
    )
    await store.record_gpu_event(
        uuid=GPU_A,
        node="gpu-node-07",
        kind="diag",
        at=T0 + timedelta(minutes=9),
        result="fail",
        detail="memory, pcie",
    )
    history = await store.gpu_history(uuid=GPU_A)
    assert [e.kind for e in history] == ["xid", "reset", "diag"]
    assert [e.id for e in history] == sorted(e.id for e in history)
    first = history[0]
    assert (first.pci_bus_id, first.gpu_index, first.xid, first.incident_id) == (
        "0000:3b:00.0",
        3,
        79,
        "inc-0000000001",
    )
    assert first.at == T0
    assert first.at.tzinfo is not None
    assert (history[1].result, history[1].actor) == ("ok", "U1")
    assert (history[2].result, history[2].detail) == ("fail", "memory, pcie")
    node = await store.gpu_history(node="gpu-node-07")
    assert [e.uuid for e in node] == [GPU_A, GPU_B, GPU_A, GPU_A]
    assert await store.gpu_history(uuid=GPU_A, since=T0 + timedelta(minutes=1)) == history[1:]
    await store.close()


async def test_history_survives_reopening_the_store(database: Database) -> None:
    """A restart (the store closed and opened again on the same database) keeps every row,
    and new rows continue the sequence after the old ones."""
    first = database.open()
    written = await first.record_gpu_event(
        uuid=GPU_A, node="gpu-node-07", kind="reboot", at=T0, xid=79
    )
    await first.close()
    again = database.open()
    later = await again.record_gpu_event(
        uuid=GPU_A, node="gpu-node-07", kind="service", at=T0 + timedelta(hours=1), detail="RMA"
    )
    history = await again.gpu_history(uuid=GPU_A)
    assert history == [written, later]
    assert later.id > written.id
    await again.close()


async def test_replicas_share_one_ledger(database: Database) -> None:
    """Two replicas on one database append side by side: each sees all rows, ids unique."""
    a, b = database.open(), database.open()
    await asyncio.gather(
        *(
            (a if i % 2 else b).record_gpu_event(
                uuid=GPU_A, node="gpu-node-07", kind="xid", at=T0 + timedelta(seconds=i), xid=31
            )
            for i in range(10)
        )
    )
    seen_a, seen_b = await a.gpu_history(uuid=GPU_A), await b.gpu_history(uuid=GPU_A)
    assert seen_a == seen_b
    assert len({e.id for e in seen_a}) == 10
    await a.close()
    await b.close()


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("uuid", "not-a-gpu", "not a GPU UUID"),
        ("kind", "drop_table", "unknown GPU event kind"),
        ("pci_bus_id", "3b:zz", "not a PCI bus id"),
        ("node", "../etc", "not a valid Kubernetes node name"),
    ],
)
async def test_bad_rows_are_refused_with_one_line(
    database: Database, field: str, value: str, says: str
) -> None:
    """A malformed UUID, node name, kind or bus id is an InputError naming it; nothing is
    written."""
    store = database.open()
    row = {"uuid": GPU_A, "node": "gpu-node-07", "kind": "xid", "at": T0, field: value}
    with pytest.raises(InputError, match=says):
        await store.record_gpu_event(**row)  # type: ignore[arg-type]
    assert await store.gpu_history(node="gpu-node-07") == []
    await store.close()


async def test_a_long_detail_is_cut_to_one_short_line(database: Database) -> None:
    """Free-form detail (diagnostics' failing tests) is kept to one line of 200 characters."""
    store = database.open()
    event = await store.record_gpu_event(
        uuid=GPU_A, node="gpu-node-07", kind="diag", at=T0, result="fail", detail="x\n" * 400
    )
    assert len(event.detail) == 200
    assert "\n" not in event.detail
    assert (await store.gpu_history(uuid=GPU_A))[0].detail == event.detail
    await store.close()

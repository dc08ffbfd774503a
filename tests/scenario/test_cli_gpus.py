"""`gpubot gpus history|clear-mark` in a subprocess: a GPU's ledger in order with its
incidents, a node's grouped per GPU, a service mark cleared on the record, one-line errors."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from test_cli import assert_one_line_error, gpubot

from gpubot.backends.store import open_store

GPU_A = "GPU-9d33a01c-353c-631c-dfd4-3f371200339d"
GPU_B = "GPU-000f49c8-1a35-8ca0-0d75-985d99c94309"
T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    """A config whose SQLite store holds a small ledger: GPU A on gpu-node-07 had an XID 79,
    a reset, a reboot and a service mark; GPU B an XID 13."""
    db = tmp_path / "gpubot.db"
    path = tmp_path / "cfg.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "store": {"url": f"sqlite:///{db}"},
                "clusters": [{"name": "sim", "state_file": str(tmp_path / "sim.json")}],
                "slack": {"mode": "off"},
            }
        ),
        encoding="utf-8",
    )

    async def seed() -> None:
        store = open_store(f"sqlite:///{db}")
        rows = [
            (GPU_A, "xid", 3, {"xid": 79, "incident_id": "inc-00000000a1"}),
            (GPU_B, "xid", 5, {"xid": 13, "incident_id": "inc-00000000b1"}),
            (GPU_A, "reset", 3, {"xid": 79, "result": "ok", "incident_id": "inc-00000000a1"}),
            (GPU_A, "reboot", 3, {"xid": 79, "incident_id": "inc-00000000a2"}),
            (GPU_A, "service", 3, {"xid": 79, "detail": "rebooted twice for XID 79"}),
        ]
        for i, (uuid, kind, index, extra) in enumerate(rows):
            await store.record_gpu_event(
                uuid=uuid,
                node="gpu-node-07",
                kind=kind,
                at=T0 + timedelta(hours=i),
                gpu_index=index,
                pci_bus_id="0000:48:00.0" if uuid == GPU_A else "",
                **extra,  # type: ignore[arg-type]
            )
        await store.close()

    asyncio.run(seed())
    return path


def test_history_of_a_gpu_lists_its_events_in_order(cfg: Path, tmp_path: Path) -> None:
    """By UUID: that GPU only, oldest first, each with its incident; the open mark shows."""
    result = gpubot("gpus", "history", GPU_A, "--config", cfg, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"{GPU_A} (gpu-node-07, GPU 3, 0000:48:00.0): 4 event(s)" in out
    assert "marked for service since 2026-11-20 12:00Z" in out
    order = [out.index(w) for w in ("XID 79", "reset ok", "reboot requested", "rebooted twice")]
    assert order == sorted(order)
    assert "inc-00000000a1" in out
    assert "inc-00000000a2" in out
    assert GPU_B not in out


def test_history_of_a_node_groups_per_gpu_as_json(cfg: Path, tmp_path: Path) -> None:
    """By node, --json: one entry per GPU (by index), every field of every event."""
    result = gpubot("gpus", "history", "gpu-node-07", "--json", "--config", cfg, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert [g["uuid"] for g in body["gpus"]] == [GPU_A, GPU_B]
    a, b = body["gpus"]
    assert [e["kind"] for e in a["events"]] == ["xid", "reset", "reboot", "service"]
    assert a["service_mark"]["detail"] == "rebooted twice for XID 79"
    assert b["service_mark"] is None
    assert b["events"][0]["xid"] == 13
    assert b["events"][0]["incident_id"] == "inc-00000000b1"


def test_clear_mark_is_recorded_in_the_ledger_and_the_audit_trail(
    cfg: Path, tmp_path: Path
) -> None:
    """A person clears the mark: a service_cleared row with the reason, a gpu.service_cleared
    audit event, the chain still verifies; clearing again says there is nothing to clear."""
    result = gpubot(
        "gpus",
        "clear-mark",
        GPU_A,
        "--reason",
        "board replaced, RMA 4711",
        "--config",
        cfg,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "service mark of 2026-11-20 12:00Z cleared" in result.stdout
    body = json.loads(
        gpubot("gpus", "history", GPU_A, "--json", "--config", cfg, cwd=tmp_path).stdout
    )
    [gpu] = body["gpus"]
    assert gpu["service_mark"] is None
    last = gpu["events"][-1]
    assert (last["kind"], last["detail"]) == ("service_cleared", "board replaced, RMA 4711")
    assert last["actor"].startswith("cli:")
    exported = gpubot("audit", "export", "--config", cfg, cwd=tmp_path).stdout.splitlines()
    [event] = [json.loads(line) for line in exported]
    assert (event["kind"], event["reason"]) == ("gpu.service_cleared", "board replaced, RMA 4711")
    assert gpubot("audit", "verify", "--config", cfg, cwd=tmp_path).returncode == 0
    again = gpubot("gpus", "clear-mark", GPU_A, "--reason", "x", "--config", cfg, cwd=tmp_path)
    assert_one_line_error(again, "has no open service mark")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("history", "$(reboot)"), "neither a GPU UUID"),
        (("clear-mark", "gpu-node-07", "--reason", "x"), "is not a GPU UUID"),
        (("clear-mark", GPU_B, "--reason", "x"), "has no open service mark"),
    ],
)
def test_bad_input_is_one_line(cfg: Path, tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    """A target that is neither a UUID nor a node name, or a GPU without a mark: one line."""
    assert_one_line_error(gpubot("gpus", *args, "--config", cfg, cwd=tmp_path), says)


def test_no_database_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    """Reading the ledger never creates a database."""
    path = tmp_path / "cfg.yaml"
    path.write_text(
        yaml.safe_dump({"store": {"url": f"sqlite:///{tmp_path / 'none.db'}"}}), encoding="utf-8"
    )
    result = gpubot("gpus", "history", "gpu-node-07", "--config", path, cwd=tmp_path)
    assert result.returncode == 1
    assert "no database" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_help_names_the_subcommands_and_what_clearing_does(tmp_path: Path) -> None:
    """`gpubot gpus --help` lists history and clear-mark; clear-mark's help says it is
    recorded and that the node label is the cluster's."""
    top = gpubot("gpus", "--help", cwd=tmp_path)
    assert top.returncode == 0
    assert "history" in top.stdout
    assert "clear-mark" in top.stdout
    clear = gpubot("gpus", "clear-mark", "--help", cwd=tmp_path)
    assert "--reason" in clear.stdout
    assert "gpu.service_cleared audit event" in " ".join(clear.stdout.split())

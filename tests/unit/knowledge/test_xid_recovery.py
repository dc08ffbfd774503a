"""XID 154: the recovery action is read from the driver's message and routes the incident."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpubot.agent.driver import XidEvent
from gpubot.agent.xid_watcher import XidWatcher, xid_alert
from gpubot.domain.incidents.alerts import AlertmanagerPayload
from gpubot.domain.incidents.correlation import XID_RECOVERY_LABEL, observations
from gpubot.domain.runbooks.loader import load_dirs
from gpubot.knowledge.xid.recovery import RecoveryAction, parse_recovery, recovery_from_label

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "alertmanager"
# Verbatim, NVIDIA/open-gpu-kernel-modules#446 (see tests/fixtures/xid/lines.yaml).
REAL_154 = "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"


def test_the_real_message_gives_gpu_reset() -> None:
    change = parse_recovery(REAL_154)
    assert change is not None
    assert (change.action, change.value, change.text) == (
        RecoveryAction.GPU_RESET,
        1,
        "GPU Reset Required",
    )
    assert (change.previous_value, change.previous_text) == (0, "None")
    assert change.as_json()["route"].startswith("xid79")


@pytest.mark.parametrize(
    ("value", "words", "action"),
    [
        (0, "None", RecoveryAction.NONE),
        (1, "GPU Reset Required", RecoveryAction.GPU_RESET),
        (2, "Node Reboot Required", RecoveryAction.NODE_REBOOT),
        (3, "Drain P2P", RecoveryAction.DRAIN_P2P),
        (4, "Drain and Reset", RecoveryAction.DRAIN_AND_RESET),
        # Other drivers word values otherwise; the value decides.
        (2, "OS Reboot", RecoveryAction.NODE_REBOOT),
        (1, "PF FLR", RecoveryAction.GPU_RESET),
        # A value gpubot does not know (NVML's RECOVER_IMEX_DOMAIN is 5): no action, no route.
        (5, "Recover IMEX Domain", None),
    ],
)
def test_each_value_of_the_drivers_format(value: int, words: str, action: Any) -> None:
    # Built in the driver's format (see REAL_154) for values no public log in the fixtures shows.
    change = parse_recovery(f"GPU recovery action changed from 0x0 (None) to 0x{value:x} ({words})")
    assert change is not None
    assert change.action == action


def test_other_messages_state_no_recovery() -> None:
    assert parse_recovery("GPU has fallen off the bus.") is None
    assert parse_recovery("") is None


@pytest.mark.parametrize(
    ("label", "action"),
    [
        ("NODE_REBOOT", RecoveryAction.NODE_REBOOT),
        ("4", RecoveryAction.DRAIN_AND_RESET),
        ("node_reboot", None),
        ("٢", None),
        ("2\n", None),
        ("", None),
        ("9", None),
    ],
)
def test_the_recovery_action_label_is_full_matched(label: str, action: Any) -> None:
    assert recovery_from_label(label) == action


def labels_after_intake(
    *, xid: str = "154", extra: dict[str, str] | None = None, description: str | None = None
) -> dict[str, str]:
    body = json.loads((FIXTURES / "xid79_firing.json").read_bytes())
    alert = body["alerts"][0]
    alert["labels"] |= {"xid": xid} | (extra or {})
    if description is not None:
        alert["annotations"]["description"] = description
    [seen] = observations(AlertmanagerPayload.model_validate(body), default_cluster="sim")
    return dict(seen.labels)


def test_intake_reads_the_action_from_the_agents_label() -> None:
    labels = labels_after_intake(extra={"recovery_action": "NODE_REBOOT"})
    assert labels[XID_RECOVERY_LABEL] == "NODE_REBOOT"


def test_intake_reads_the_action_from_the_drivers_line_in_the_description() -> None:
    line = f"NVRM: Xid (PCI:0000:0b:00): 154, {REAL_154}"
    assert labels_after_intake(description=line)[XID_RECOVERY_LABEL] == "GPU_RESET"


def test_no_recovery_label_unless_xid_154_states_one() -> None:
    assert XID_RECOVERY_LABEL not in labels_after_intake()
    assert XID_RECOVERY_LABEL not in labels_after_intake(
        xid="79", extra={"recovery_action": "NODE_REBOOT"}
    )


def test_a_sender_cannot_set_the_derived_label_itself() -> None:
    labels = labels_after_intake(extra={XID_RECOVERY_LABEL: "NODE_REBOOT"})
    assert XID_RECOVERY_LABEL not in labels


def routed(labels: dict[str, str]) -> set[str]:
    return {
        i.runbook.name for i in load_dirs([ROOT / "runbooks"]) if i.runbook.matches_alert(labels)
    }


@pytest.mark.parametrize(
    ("action", "runbook"),
    [
        ("GPU_RESET", "xid79"),
        ("DRAIN_AND_RESET", "xid79"),
        ("NODE_REBOOT", "xid79"),
        ("DRAIN_P2P", "xid-route"),
        ("NONE", "xid-route"),
    ],
)
def test_each_recovery_action_runs_exactly_one_runbook(action: str, runbook: str) -> None:
    assert routed(labels_after_intake(extra={"recovery_action": action})) == {runbook}


def test_xid_154_without_a_stated_action_asks_a_person() -> None:
    assert routed(labels_after_intake()) == {"xid-route"}


def test_other_xids_route_as_before() -> None:
    assert routed(labels_after_intake(xid="79")) == {"xid79"}
    assert routed(labels_after_intake(xid="13")) == {"xid-route"}


EVENT = XidEvent(gpu=3, uuid="GPU-1", xid=154, at=datetime(2026, 11, 25, 14, 0, tzinfo=UTC))


def test_the_agent_puts_the_action_on_xid_154_alerts_only() -> None:
    body = xid_alert(
        EVENT, node="gpu-node-07", cluster="sim", window_s=300, recovery=RecoveryAction.GPU_RESET
    )
    assert body["alerts"][0]["labels"]["recovery_action"] == "GPU_RESET"
    other = XidEvent(gpu=3, uuid="GPU-1", xid=79, at=EVENT.at)
    body = xid_alert(
        other, node="gpu-node-07", cluster="sim", window_s=300, recovery=RecoveryAction.GPU_RESET
    )
    assert "recovery_action" not in body["alerts"][0]["labels"]


class _OneEvent:
    def wait_xid(self, *, timeout_s: float) -> XidEvent | None:
        return EVENT


async def test_the_watcher_reads_the_action_for_xid_154() -> None:
    sent: list[dict[str, Any]] = []
    asked: list[int] = []

    async def send(body: dict[str, Any]) -> None:
        sent.append(body)

    def recovery(gpu: int) -> RecoveryAction | None:
        asked.append(gpu)
        return RecoveryAction.NODE_REBOOT

    watcher = XidWatcher(
        _OneEvent(), node="gpu-node-07", cluster="sim", send=send, recovery=recovery
    )
    await watcher.run_once()
    assert asked == [3]
    assert sent[0]["alerts"][0]["labels"]["recovery_action"] == "NODE_REBOOT"

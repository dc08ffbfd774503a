"""XID 154: the recovery action the driver says a GPU now needs, and where gpubot routes it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gpubot.knowledge.outside_numbers import ascii_int

RECOVERY_XID = 154


class RecoveryAction(StrEnum):
    """NVML's GPU recovery actions (nvmlDeviceGpuRecoveryAction_t), by the value NVML gives."""

    NONE = "NONE"  # 0: nothing to do (the action was cleared)
    GPU_RESET = "GPU_RESET"  # 1: "GPU Reset Required"
    NODE_REBOOT = "NODE_REBOOT"  # 2: "Node Reboot Required"
    DRAIN_P2P = "DRAIN_P2P"  # 3: "Drain P2P"
    DRAIN_AND_RESET = "DRAIN_AND_RESET"  # 4: "Drain and Reset"


_BY_VALUE = dict(enumerate(RecoveryAction))
# The driver's words, for a message whose value gpubot does not know. Some drivers word the
# same value otherwise ("0x2 (OS Reboot)", "0x1 (PF FLR)"): the value decides.
_BY_WORDS = {
    "none": RecoveryAction.NONE,
    "gpu reset required": RecoveryAction.GPU_RESET,
    "node reboot required": RecoveryAction.NODE_REBOOT,
    "drain p2p": RecoveryAction.DRAIN_P2P,
    "drain and reset": RecoveryAction.DRAIN_AND_RESET,
}
# `GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)`; bounded.
_CHANGED = re.compile(
    r"recovery action changed from 0x(?P<old>[0-9A-Fa-f]{1,8}) \((?P<old_text>[^()\n]{0,48})\)"
    r" to 0x(?P<new>[0-9A-Fa-f]{1,8}) \((?P<new_text>[^()\n]{0,48})\)",
    re.ASCII,
)

# What gpubot does for each action. The runbooks route on the label gpubot_xid_recovery:
# a reset (drain first) runs xid79's drain-and-reset; a reboot runs xid79 with the reset
# skipped and a reboot request instead; Drain P2P asks a person; None is recorded only.
ROUTES = {
    RecoveryAction.GPU_RESET: "xid79: drain, reset the GPU, verify",
    RecoveryAction.DRAIN_AND_RESET: "xid79: drain, reset the GPU, verify",
    RecoveryAction.NODE_REBOOT: "xid79: drain, then a reboot request (no GPU reset)",
    RecoveryAction.DRAIN_P2P: "xid-route: a person drains peer-to-peer work",
    RecoveryAction.NONE: "xid-route: recorded only (the action was cleared)",
}


@dataclass(frozen=True)
class RecoveryChange:
    """An XID 154 message: the action before and after, as values and as the driver's words."""

    action: RecoveryAction | None  # None: a value gpubot does not know
    value: int
    text: str
    previous_value: int
    previous_text: str

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action.value if self.action is not None else None,
            "value": self.value,
            "text": self.text,
            "previous_value": self.previous_value,
            "previous_text": self.previous_text,
            "route": ROUTES.get(self.action) if self.action is not None else None,
        }


def _action(value: int, words: str) -> RecoveryAction | None:
    return _BY_VALUE.get(value) or _BY_WORDS.get(words.strip().lower())


def parse_recovery(message: str) -> RecoveryChange | None:
    """The recovery-action change an XID 154 message states, or None."""
    found = _CHANGED.search(message)
    if found is None:
        return None
    value, text = int(found["new"], 16), found["new_text"].strip()
    return RecoveryChange(
        action=_action(value, text),
        value=value,
        text=text,
        previous_value=int(found["old"], 16),
        previous_text=found["old_text"].strip(),
    )


def recovery_from_label(value: str) -> RecoveryAction | None:
    """A `recovery_action` label: NVML's name (GPU_RESET) or its number (1), full-matched."""
    number = ascii_int(value)
    if number is not None:
        return _BY_VALUE.get(number)
    return RecoveryAction.__members__.get(value)

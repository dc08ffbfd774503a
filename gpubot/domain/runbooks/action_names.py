"""The names of the built-in actions, defined once: runbooks name them in `action:`, the
registry registers them, and the rules that read a run's steps compare against them."""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    """A built-in action's name; equal to the string a runbook writes (`node.cordon`)."""

    GPU_DIAG = "gpu.diag"
    GPU_HISTORY = "gpu.history"
    GPU_POWER_CAP = "gpu.power_cap"
    GPU_POWER_RESTORE = "gpu.power_restore"
    GPU_RESET = "gpu.reset"
    GPU_THERMAL_CHECK = "gpu.thermal_check"
    GPU_WAIT_COOL = "gpu.wait_cool"
    NODE_ASK_HUMAN = "node.ask_human"
    NODE_CORDON = "node.cordon"
    NODE_DRAIN = "node.drain"
    NODE_GATHER_EVIDENCE = "node.gather_evidence"
    NODE_GPU_HEALTH = "node.gpu_health"
    NODE_MARK_FOR_SERVICE = "node.mark_for_service"
    NODE_REQUEST_REBOOT = "node.request_reboot"
    NODE_STATUS = "node.status"
    NODE_TAINT = "node.taint"
    NODE_UNCORDON = "node.uncordon"
    NODE_UNTAINT = "node.untaint"
    NOTIFY = "notify"
    TRIAGE_OOM = "triage.oom"
    TRIAGE_XID = "triage.xid"
    WAIT = "wait"
    WORKLOAD_GRACE = "workload.grace"
    WORKLOAD_NOTIFY_OWNER = "workload.notify_owner"
    WORKLOAD_RECLAIM = "workload.reclaim"
    WORKLOAD_RECLAIM_GUARD = "workload.reclaim_guard"

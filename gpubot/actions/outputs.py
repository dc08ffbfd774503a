"""The outputs of the built-in actions: what `steps.<id>.output.<key>` a runbook may read.

The registry puts these on each ActionSpec that declares none itself, so `gpubot actions`,
the docs' actions reference and runbook validation read one source. An action without an entry
here (nor on its spec) has undeclared outputs: validation does not check keys read from it.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpubot.domain.runbooks.action_names import Action

_NODE = {"node": "the node's name"}
_GPU = {**_NODE, "gpu": "the GPU's index"}

OUTPUTS: Mapping[str, Mapping[str, str]] = {
    Action.NODE_CORDON: {
        **_NODE,
        "was_cordoned": "the node is (now) unschedulable",
        "cordoned_by": "who cordoned it (gpubot's actor, or the annotation's writer)",
        "foreign": "it was cordoned before, and not by gpubot",
    },
    Action.NODE_UNCORDON: {**_NODE, "was_cordoned": "the node was unschedulable before"},
    Action.NODE_TAINT: {**_NODE, "taint": "the taint, key=value:effect"},
    Action.NODE_UNTAINT: {**_NODE, "taint": "the taint removed, key=value:effect"},
    Action.NODE_GPU_HEALTH: {
        **_NODE,
        "gpus": "how many GPUs the node reports",
        "lost_gpus": "indexes of GPUs that fell off the bus",
        "xid_errors": "XID codes seen, by GPU index",
        "unhealthy": "how many GPUs are unhealthy",
        "healthy": "every GPU is healthy",
    },
    Action.NODE_STATUS: {
        **_NODE,
        "unschedulable": "the node is cordoned",
        "ready": "the node is Ready",
        "cordoned_by": "who cordoned it ('' when schedulable)",
        "cordon_reason": "the cordon's recorded reason ('' when schedulable)",
        "foreign": "cordoned, and not by gpubot",
    },
    Action.GPU_RESET: {
        **_GPU,
        "was_lost": "the GPU had fallen off the bus before the reset",
        "healthy": "the GPU reads healthy after the reset",
    },
    Action.GPU_POWER_CAP: {
        **_GPU,
        "previous_w": "the power limit before, in watts",
        "limit_w": "the power limit now, in watts",
        "temperature_c_before": "the temperature before the cap, °C",
        "default_w": "the GPU's default power limit, watts",
        "range_w": "the [min, max] power limit the GPU allows, watts",
    },
    Action.GPU_POWER_RESTORE: {
        **_GPU,
        "previous_w": "the power limit before, in watts",
        "limit_w": "the power limit now, in watts",
        "temperature_c": "the temperature after the restore, °C",
    },
    Action.GPU_THERMAL_CHECK: {
        **_GPU,
        "hot": "the GPU is at or above the threshold",
        "temperature_c": "the GPU's temperature, °C",
        "prometheus_temperature_c": "DCGM's temperature from Prometheus, °C (None without one)",
        "threshold_c": "the threshold it was compared with, °C",
        "throttle_reasons": "the driver's clock throttle reasons",
        "thermal_throttling": "a thermal throttle reason is active",
        "power_draw_w": "power draw now, watts",
        "power_limit_w": "power limit now, watts",
        "lost": "the GPU has fallen off the bus",
    },
    Action.GPU_WAIT_COOL: {
        **_GPU,
        "reason": "why the wait ended",
        "temperature_c": "the temperature at the end, °C",
        "still_hot": "still at or above the threshold",
        "waited_seconds": "how long it waited",
    },
    "notify": {"posted": "the text posted to the incident thread"},
    "wait": {"waited_seconds": "how long it waited"},
}

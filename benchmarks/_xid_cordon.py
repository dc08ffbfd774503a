"""What the fleet and alert-cost benchmarks run gpubot with: one runbook that cordons the node
an XID alert names, and console output that goes nowhere (no Slack in a benchmark)."""

from __future__ import annotations

RUNBOOK = """
name: xid-cordon
description: cordon the node an XID alert names (the benchmarks' only runbook)
triggers:
  - alertname: GPUXidError
params:
  node: {type: node, default: "{{ alert.labels.Hostname }}"}
target: node
steps:
  - {id: cordon, action: node.cordon, args: {node: "{{ params.node }}"}, approval: auto}
"""


class Sink:
    """Console output (no Slack here) that goes nowhere."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

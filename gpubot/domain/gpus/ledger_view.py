"""A GPU's or a node's ledger as a neutral message and as JSON, for the CLI and `/gpu history`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpubot.domain.gpus.ledger import GpuEvent, by_gpu, open_service_mark
from gpubot.domain.results import Message, Table, Text

SHOWN_PER_GPU = 20  # rows per GPU in a chat reply; the CLI shows them all


def _gpu_heading(uuid: str, events: Sequence[GpuEvent]) -> str:
    last = events[-1]
    index = next((e.gpu_index for e in reversed(events) if e.gpu_index is not None), None)
    bus = next((e.pci_bus_id for e in reversed(events) if e.pci_bus_id), "")
    where = [last.node]
    if index is not None:
        where.append(f"GPU {index}")
    if bus:
        where.append(bus)
    heading = f"{uuid} ({', '.join(where)}): {len(events)} event(s)"
    mark = open_service_mark(events)
    if mark is not None:
        heading += f"; marked for service since {mark.at.strftime('%Y-%m-%d %H:%M')}Z"
    return heading


def history_message(
    target: str, events: Sequence[GpuEvent], *, limit: int | None = None
) -> Message:
    """One table per GPU, events oldest first with their incidents; `limit` keeps the newest
    rows of each GPU (and says how many were left out)."""
    if not events:
        return Message(f"GPU history of {target}: nothing recorded")
    groups = by_gpu(events)
    blocks: list[Text | Table] = []
    for uuid, gpu_events in groups.items():
        blocks.append(Text(_gpu_heading(uuid, gpu_events)))
        shown = gpu_events[-limit:] if limit is not None else gpu_events
        if len(shown) < len(gpu_events):
            blocks.append(Text(f"(the last {len(shown)}; older ones: gpubot gpus history)"))
        rows = tuple(
            (
                str(e.id),
                e.at.strftime("%Y-%m-%d %H:%M") + "Z",
                e.what(),
                e.incident_id or "-",
                e.actor,
            )
            for e in shown
        )
        blocks.append(Table(("#", "when", "what", "incident", "by"), rows))
    return Message(f"GPU history of {target}: {len(groups)} GPU(s)", tuple(blocks))


def history_json(target: str, events: Sequence[GpuEvent]) -> dict[str, Any]:
    """Every event, grouped per GPU, for `gpubot gpus history --json`."""
    gpus = []
    for uuid, gpu_events in by_gpu(events).items():
        mark = open_service_mark(gpu_events)
        gpus.append(
            {
                "uuid": uuid,
                "node": gpu_events[-1].node,
                "service_mark": mark.as_json() if mark is not None else None,
                "events": [e.as_json() for e in gpu_events],
            }
        )
    return {"target": target, "gpus": gpus}

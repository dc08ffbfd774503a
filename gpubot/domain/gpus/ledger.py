"""The per-GPU health ledger: what happened to one GPU (XIDs, resets, reboots, diagnostics,
service marks), and pure reads over its history."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from gpubot.domain.k8s_names import check_node_name
from gpubot.knowledge.outside_numbers import is_gpu_uuid
from gpubot.knowledge.pci import normalise_bus_id

GpuEventKind = Literal["xid", "reset", "reboot", "diag", "service", "service_cleared"]
EVENT_KINDS: tuple[str, ...] = get_args(GpuEventKind)
DETAIL_MAX = 200  # a short line: "fail: memory, pcie", a reason for a service mark
RESULT_MAX = 16
SYSTEM = "system"


def check_gpu_uuid(text: str) -> str:
    """`text` when it is a GPU UUID (GPU-… or MIG-…); ValueError naming it otherwise."""
    if not is_gpu_uuid(text):
        raise ValueError(f"{text[:80]!r} is not a GPU UUID (GPU-… or MIG-…)")
    return text


@dataclass(frozen=True)
class GpuEvent:
    """One ledger row; `id` is the store's monotonic sequence (0 before it is stored).

    `xid` is the code seen (kind xid) or the one that led to the step (reset, reboot,
    service); `result` is short: ok/failed for a reset, pass/fail for diagnostics.
    """

    id: int
    at: datetime
    uuid: str
    node: str
    kind: GpuEventKind
    pci_bus_id: str = ""
    gpu_index: int | None = None
    xid: int | None = None
    incident_id: str | None = None
    run_id: str | None = None
    result: str = ""
    detail: str = ""
    actor: str = SYSTEM

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "uuid": self.uuid,
            "node": self.node,
            "pci_bus_id": self.pci_bus_id,
            "gpu_index": self.gpu_index,
            "kind": self.kind,
            "xid": self.xid,
            "incident_id": self.incident_id,
            "run_id": self.run_id,
            "result": self.result,
            "detail": self.detail,
            "actor": self.actor,
        }

    def what(self) -> str:
        """The event in a few words: `XID 79`, `reset ok`, `diag fail (memory)`."""
        if self.kind == "xid":
            words = f"XID {self.xid}"
        elif self.kind == "service":
            words = "marked for service"
        elif self.kind == "service_cleared":
            words = "service mark cleared"
        elif self.kind == "reboot":
            words = "reboot requested"
        else:
            words = f"{self.kind} {self.result}".strip()
        if self.kind != "xid" and self.xid is not None:
            words += f" (XID {self.xid})"
        if self.detail:
            words += f": {self.detail}"
        return words

    def line(self) -> str:
        """One line for a thread, a reply or the CLI: when, what, which incident."""
        when = self.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        where = f" [{self.incident_id}]" if self.incident_id else ""
        return f"{when}Z {self.what()}{where}"


def new_event(
    *,
    uuid: str,
    node: str,
    kind: str,
    at: datetime,
    pci_bus_id: str = "",
    gpu_index: int | None = None,
    xid: int | None = None,
    incident_id: str | None = None,
    run_id: str | None = None,
    result: str = "",
    detail: str = "",
    actor: str = SYSTEM,
) -> GpuEvent:
    """A checked event to append (id 0): ValueError for a bad UUID, node name, kind or bus
    id; the detail is cut to one short line, never refused (it is free-form)."""
    node = check_node_name(node)
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown GPU event kind {kind[:40]!r} (known: {', '.join(EVENT_KINDS)})")
    bus = ""
    if pci_bus_id:
        bus = normalise_bus_id(pci_bus_id) or ""
        if not bus:
            raise ValueError(f"{pci_bus_id[:40]!r} is not a PCI bus id")
    if gpu_index is not None and not 0 <= gpu_index <= 63:
        raise ValueError(f"GPU index {gpu_index} is out of range")
    one_line = " ".join(detail.split())
    return GpuEvent(
        id=0,
        at=at,
        uuid=check_gpu_uuid(uuid),
        node=node,
        kind=kind,  # type: ignore[arg-type]  # checked against EVENT_KINDS above
        pci_bus_id=bus,
        gpu_index=gpu_index,
        xid=xid,
        incident_id=incident_id,
        run_id=run_id,
        result=" ".join(result.split())[:RESULT_MAX],
        detail=one_line[: DETAIL_MAX - 1] + "…" if len(one_line) > DETAIL_MAX else one_line,
        actor=actor[:255],
    )


def open_service_mark(history: Iterable[GpuEvent]) -> GpuEvent | None:
    """The service mark (RMA) still in force: the last `service` not cleared after it."""
    mark: GpuEvent | None = None
    for event in sorted(history, key=lambda e: e.id):
        if event.kind == "service":
            mark = mark or event
        elif event.kind == "service_cleared":
            mark = None
    return mark


def since_last_clear(history: Iterable[GpuEvent]) -> list[GpuEvent]:
    """The events after the last cleared service mark: a GPU back from service starts over."""
    ordered = sorted(history, key=lambda e: e.id)
    cleared = [i for i, e in enumerate(ordered) if e.kind == "service_cleared"]
    return ordered[cleared[-1] + 1 :] if cleared else ordered


def by_gpu(history: Iterable[GpuEvent]) -> dict[str, list[GpuEvent]]:
    """Events grouped per GPU UUID, GPUs in index order (then UUID), events in id order."""
    groups: dict[str, list[GpuEvent]] = {}
    for event in sorted(history, key=lambda e: e.id):
        groups.setdefault(event.uuid, []).append(event)

    def order(uuid: str) -> tuple[int, str]:
        indexes = [e.gpu_index for e in groups[uuid] if e.gpu_index is not None]
        return (indexes[-1] if indexes else 99, uuid)

    return {uuid: groups[uuid] for uuid in sorted(groups, key=order)}


def recent_lines(history: Sequence[GpuEvent], *, limit: int = 5) -> list[str]:
    """The last `limit` events as lines, oldest first."""
    ordered = sorted(history, key=lambda e: e.id)
    return [e.line() for e in ordered[-limit:]] if limit > 0 else []


def summary(history: Sequence[GpuEvent], *, limit: int = 5) -> str:
    """A short text of the last events, for a thread message: `none recorded` when empty."""
    lines = recent_lines(history, limit=limit)
    if not lines:
        return "no earlier events recorded"
    more = len(history) - len(lines)
    head = f"last {len(lines)} of {len(history)} events" if more > 0 else f"{len(lines)} events"
    return f"{head}: " + "; ".join(lines)

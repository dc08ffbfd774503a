"""What a kernel log says per GPU: its XIDs, its UUID, and whether XID 13 or 31 came back."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpubot.knowledge.log_time import LogTime
from gpubot.knowledge.xid.catalog import CATALOG_URL, explain
from gpubot.knowledge.xid.kernel_log import (
    GpuIdentity,
    XidEvent,
    parse_gpu_identities,
    parse_xid_lines,
)

# XIDs NVIDIA's catalog files under "restart the application" whose investigation depends on
# whether they recur on one GPU: a GPU that faults under different jobs is suspect itself.
REPEAT_XIDS = (13, 31)
DEFAULT_WINDOW_S = 24 * 3600.0
# One fault prints several lines within milliseconds (Warp Exception, Global Exception,
# ESR for each SM). Lines of one code on one GPU less than this apart are one occurrence.
BURST_S = 5.0
# NVIDIA's catalog, WORKFLOW_XID_13 / WORKFLOW_XID_31: a repeat on the same GPU (by PCI id)
# means run DCGM diagnostics (a possible hardware fault), then field diagnostics if they
# pass; a solo fault, or repeats spread over different GPUs, means check the application.
REPEATED_ADVICE = (
    "XID {code} came back on the same GPU: NVIDIA's catalog says run DCGM diagnostics on it "
    "(a possible hardware fault), then field diagnostics if they pass."
)
SINGLE_ADVICE = (
    "XID {code} once on this GPU: NVIDIA's catalog says check the application "
    "(compute-sanitizer, cuda-gdb), and report the issue if the application is known good."
)


@dataclass(frozen=True)
class GpuSummary:
    """One GPU's XIDs in the log: codes with counts (in code order), first and last stamp."""

    pci: str
    uuid: str | None
    serial: str | None
    counts: tuple[tuple[int, int], ...]
    events: int
    first: LogTime | None
    last: LogTime | None

    def as_json(self) -> dict[str, Any]:
        return {
            "pci": self.pci,
            "uuid": self.uuid,
            "serial": self.serial,
            "events": self.events,
            "xids": {str(code): n for code, n in self.counts},
            "first": self.first.as_json() if self.first is not None else None,
            "last": self.last.as_json() if self.last is not None else None,
        }


@dataclass(frozen=True)
class RepeatCheck:
    """XID 13 or 31 on one GPU: how often it occurred within the window, and what to do.

    `occurrences` counts faults, not lines (a burst of lines is one). `timed` is False when
    the lines carry no comparable stamps, so the window could not be applied: every
    occurrence in the log counts then.
    """

    pci: str
    code: int
    lines: int
    occurrences: int
    processes: tuple[str, ...]
    window_s: float
    timed: bool
    first: LogTime | None
    last: LogTime | None

    @property
    def repeated(self) -> bool:
        return self.occurrences >= 2

    @property
    def advice(self) -> str:
        return (REPEATED_ADVICE if self.repeated else SINGLE_ADVICE).format(code=self.code)

    def as_json(self) -> dict[str, Any]:
        return {
            "pci": self.pci,
            "xid": self.code,
            "lines": self.lines,
            "occurrences": self.occurrences,
            "repeated": self.repeated,
            "processes": list(self.processes),
            "window_s": self.window_s,
            "timed": self.timed,
            "first": self.first.as_json() if self.first is not None else None,
            "last": self.last.as_json() if self.last is not None else None,
            "advice": self.advice,
            "source": CATALOG_URL,
        }


@dataclass(frozen=True)
class XidReport:
    """Everything `gpubot xid parse` reports about one log."""

    events: tuple[XidEvent, ...]
    gpus: tuple[GpuSummary, ...]
    identities: tuple[GpuIdentity, ...]
    repeats: tuple[RepeatCheck, ...]

    def as_json(self) -> dict[str, Any]:
        def action(code: int) -> dict[str, Any]:
            info = explain(code)
            return {
                "action": info.action if info is not None else None,
                "runbook": info.runbook if info is not None else None,
            }

        return {
            "events": [e.as_json() | action(e.code) for e in self.events],
            "gpus": [g.as_json() for g in self.gpus],
            "identities": [i.as_json() for i in self.identities],
            "repeats": [r.as_json() for r in self.repeats],
        }


def _gap(earlier: LogTime | None, later: LogTime | None) -> float | None:
    """Seconds from one stamp to a later one, or None when they do not compare."""
    if earlier is None or later is None or earlier.kind != later.kind:
        return None
    gap = later.seconds() - earlier.seconds()
    return gap if gap >= 0 else None  # a reboot resets uptime; a syslog log crosses New Year


def _occurrences(events: Sequence[XidEvent]) -> list[list[XidEvent]]:
    bursts: list[list[XidEvent]] = []
    for event in events:
        if bursts:
            prev = bursts[-1][-1]
            gap = _gap(prev.time, event.time)
            same_owner = (prev.pid, prev.process) == (event.pid, event.process)
            if (gap is not None and gap < BURST_S) or (gap is None and same_owner):
                bursts[-1].append(event)
                continue
        bursts.append([event])
    return bursts


def _densest(bursts: list[list[XidEvent]], window_s: float) -> tuple[list[list[XidEvent]], bool]:
    """The most occurrences that fit in one window, and whether the stamps allowed checking."""
    starts = [b[0].time for b in bursts]
    if len(bursts) < 2:
        return bursts, True
    if any(_gap(a, b) is None for a, b in itertools.pairwise(starts)):
        return bursts, False
    best = (0, 1)
    lo = 0
    for hi in range(len(bursts)):
        while (_gap(starts[lo], starts[hi]) or 0.0) > window_s:
            lo += 1
        if hi - lo + 1 > best[1] - best[0]:
            best = (lo, hi + 1)
    return bursts[best[0] : best[1]], True


def _owner(event: XidEvent) -> str:
    if event.pid is None:
        return str(event.process)
    return f"{event.process or '?'} (pid {event.pid})"


def _repeat(pci: str, code: int, events: list[XidEvent], window_s: float) -> RepeatCheck:
    chosen, timed = _densest(_occurrences(events), window_s)
    lines = [e for burst in chosen for e in burst]
    owners = sorted({_owner(e) for e in lines if e.process or e.pid is not None})
    return RepeatCheck(
        pci=pci,
        code=code,
        lines=len(lines),
        occurrences=len(chosen),
        processes=tuple(owners),
        window_s=window_s,
        timed=timed,
        first=lines[0].time,
        last=lines[-1].time,
    )


def summarise(
    events: Sequence[XidEvent],
    identities: dict[str, GpuIdentity],
    *,
    window_s: float = DEFAULT_WINDOW_S,
) -> XidReport:
    """Per-GPU summary and repeat checks for events in log order."""
    by_gpu: dict[str, list[XidEvent]] = {}
    for event in events:
        by_gpu.setdefault(event.pci, []).append(event)
    gpus = []
    repeats = []
    for pci, mine in by_gpu.items():
        ident = identities.get(pci)
        counts = Counter(e.code for e in mine)
        stamped = [e.time for e in mine if e.time is not None]
        gpus.append(
            GpuSummary(
                pci=pci,
                uuid=ident.uuid if ident is not None else None,
                serial=ident.serial if ident is not None else None,
                counts=tuple(sorted(counts.items())),
                events=len(mine),
                first=stamped[0] if stamped else None,
                last=stamped[-1] if stamped else None,
            )
        )
        for code in REPEAT_XIDS:
            of_code = [e for e in mine if e.code == code]
            if of_code:
                repeats.append(_repeat(pci, code, of_code, window_s))
    return XidReport(
        events=tuple(events),
        gpus=tuple(gpus),
        identities=tuple(identities.values()),
        repeats=tuple(repeats),
    )


def read_xid_log(text: str, *, window_s: float = DEFAULT_WINDOW_S) -> XidReport:
    """Parse a kernel log: its XID events, per-GPU summary, UUIDs and XID 13/31 repeats."""
    return summarise(parse_xid_lines(text), parse_gpu_identities(text), window_s=window_s)

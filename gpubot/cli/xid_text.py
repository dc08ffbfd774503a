"""The human-readable text of `gpubot xid parse`: events, then per GPU, then XID 13/31 repeats."""

from __future__ import annotations

from gpubot.knowledge.log_time import LogTime
from gpubot.knowledge.xid.catalog import explain
from gpubot.knowledge.xid.per_gpu import XidReport
from gpubot.knowledge.xid.recovery import ROUTES

_MESSAGE_WIDTH = 100


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _when(stamp: LogTime | None) -> str:
    return stamp.text if stamp is not None else "-"


def _short(text: str, width: int = _MESSAGE_WIDTH) -> str:
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0]
    return cut + "…"


def _events(report: XidReport) -> list[str]:
    width = max([len(_when(e.time)) for e in report.events] + [4])
    lines = [
        f"{'XID':>4}  {'PCI':<12}  {'PID':>8}  {'PROCESS':<16} {'TIME':<{width}}  "
        f"{'ACTION':<20} MESSAGE"
    ]
    for e in report.events:
        info = explain(e.code)
        action = (info.action if info is not None else None) or "-"
        if e.recovery is not None and e.recovery.action is not None:
            action = f"recovery {e.recovery.action}"
        pid = str(e.pid) if e.pid is not None else "-"
        lines.append(
            f"{e.code:>4}  {e.pci:<12}  {pid:>8}  {e.process or '-':<16} "
            f"{_when(e.time):<{width}}  {action:<20} {_short(e.message)}"
        )
    return lines


def _gpus(report: XidReport) -> list[str]:
    lines = [f"per GPU ({len(report.gpus)}):"]
    for g in report.gpus:
        codes = ", ".join(f"XID {code} x{n}" for code, n in g.counts)
        names = g.uuid or "UUID not in log"
        if g.serial:
            names += f", serial {g.serial}"
        lines.append(f"  {g.pci}  {names}")
        lines.append(f"    {codes}; first {_when(g.first)}, last {_when(g.last)}")
    seen = {g.pci for g in report.gpus}
    quiet = [i for i in report.identities if i.pci not in seen]
    for ident in quiet:
        serial = f", serial {ident.serial}" if ident.serial else ""
        lines.append(f"  {ident.pci}  {ident.uuid}{serial} (named in the log, no XID)")
    return lines


def _recoveries(report: XidReport) -> list[str]:
    lines = []
    for e in report.events:
        if e.recovery is None:
            continue
        said = f'0x{e.recovery.value:x} "{e.recovery.text}"'
        if e.recovery.action is None:
            lines.append(f"  {e.pci}: {said}, an action gpubot does not know: ask a person")
        else:
            lines.append(f"  {e.pci}: {said} = {e.recovery.action} -> {ROUTES[e.recovery.action]}")
    return ["XID 154 recovery actions:", *lines] if lines else []


def _repeats(report: XidReport) -> list[str]:
    if not report.repeats:
        return []
    window = _duration(report.repeats[0].window_s)
    lines = [f"XID 13/31 on one GPU within {window}:"]
    for r in report.repeats:
        how = f"{r.occurrences} occurrence(s), {r.lines} line(s)"
        if not r.timed:
            how += ", stamps not comparable: the whole log counts"
        if r.processes:
            how += f"; processes: {', '.join(r.processes)}"
        lines.append(f"  {r.pci} XID {r.code}: {how}")
        lines.append(f"    {r.advice}")
    return lines


def render_report(report: XidReport) -> str:
    """The whole report as text; "no XID events found" when the log has none."""
    if not report.events:
        return "no XID events found"
    parts = [_events(report), _gpus(report), _recoveries(report), _repeats(report)]
    return "\n\n".join("\n".join(part) for part in parts if part)

"""Find NVIDIA XID events in kernel log text (dmesg, journalctl -k, syslog)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The driver prints `NVRM: Xid (<bus id>): <code>, <details>`. Drivers before ~R400 print the
# bus id bare ("0000:03:00"), newer ones prefix it ("PCI:0000:3b:00"). Whatever comes before
# "NVRM:" (a dmesg "[12345.678]" stamp, a journal "Nov 22 01:02:03 host kernel:" prefix, a
# syslog priority) is ignored, so one pattern reads every log flavour.
_BUS_ID = r"[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?"
_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>" + _BUS_ID + r")\):\s*(?P<code>\d+)\s*,?\s*(?P<rest>.*)$"
)
# Newer drivers start the details with the process that owned the faulting channel:
# "pid=1234, name=python3, ...", sometimes "pid=1234, ..." alone, and pid='<unknown>',
# name=<unknown> when the driver does not know it.
_PROCESS = re.compile(
    r"^pid=(?P<pid>\d+|'?<unknown>'?)\s*(?:,\s*name=(?P<name>[^,]*?)\s*)?(?:,\s*|$)"
)


@dataclass(frozen=True)
class XidEvent:
    """One XID line: the code, the GPU's PCI bus id, the process if known, and the text."""

    code: int
    pci: str
    pid: int | None
    process: str | None
    message: str
    line: str

    def as_json(self) -> dict[str, Any]:
        return {
            "xid": self.code,
            "pci": self.pci,
            "pid": self.pid,
            "process": self.process,
            "message": self.message,
            "line": self.line,
        }


def parse_xid_line(line: str) -> XidEvent | None:
    """The XID event on this log line, or None if the line is not an XID report."""
    found = _XID.search(line)
    if found is None:
        return None
    rest = found["rest"].strip()
    pid: int | None = None
    process: str | None = None
    owner = _PROCESS.match(rest)
    if owner is not None:
        pid = int(owner["pid"]) if owner["pid"].isdigit() else None
        name = (owner["name"] or "").strip()
        process = None if name in ("", "<unknown>") else name
        rest = rest[owner.end() :].strip()
    return XidEvent(
        code=int(found["code"]),
        pci=found["pci"].lower(),
        pid=pid,
        process=process,
        message=rest,
        line=line.strip(),
    )


def parse_xid_lines(text: str) -> list[XidEvent]:
    """Every XID event in `text`, in log order; other lines are skipped."""
    events = (parse_xid_line(line) for line in text.splitlines())
    return [event for event in events if event is not None]

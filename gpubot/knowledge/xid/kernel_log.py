"""Find NVIDIA XID events in kernel log text (dmesg, journalctl -k, syslog)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpubot.knowledge.log_time import LogTime, line_time, uptime
from gpubot.knowledge.pci import normalise_bus_id
from gpubot.knowledge.xid.recovery import RECOVERY_XID, RecoveryChange, parse_recovery

# The driver prints `NVRM: Xid (<bus id>): <code>, <details>`. Drivers before ~R400 print the
# bus id bare ("0000:03:00"), newer ones prefix it ("PCI:0000:3b:00"). What comes before
# "NVRM:" (a dmesg "[12345.678]" stamp, a journal "Nov 22 01:02:03 host kernel:" prefix, a
# syslog priority) is read for its timestamp only, so one pattern reads every log flavour.
# Every quantifier is bounded and numbers are ASCII digits only (re.ASCII).
_BUS_ID = r"[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"
_XID = re.compile(
    r"NVRM: Xid \((?P<pci>(?:PCI:)?" + _BUS_ID + r")\): {0,4}"
    r"(?P<code>[0-9]{1,5})(?=[ ,]|$) {0,4},? {0,4}",
    re.ASCII,
)
# Newer drivers start the details with the process that owned the faulting channel:
# "pid=1234, name=python3, ...", sometimes "pid=1234, ..." alone, and pid='<unknown>',
# name=<unknown> when the driver does not know it.
_PROCESS = re.compile(
    r"pid=(?P<pid>[0-9]{1,10}|'?<unknown>'?) {0,4}(?:, {0,4}name=(?P<name>[^,]{0,256}))?(?:,|$)",
    re.ASCII,
)
# Printed once per GPU before its first XID: `NVRM: GPU at PCI:0000:3b:00: GPU-<uuid>`,
# then, where the board has one, `NVRM: GPU Board Serial Number: <serial>`.
_GPU_AT = re.compile(
    r"NVRM: GPU at (?P<pci>PCI:" + _BUS_ID + r"): (?P<uuid>GPU-[0-9A-Fa-f-]{8,64})(?:\s|$)",
    re.ASCII,
)
_SERIAL = re.compile(r"NVRM: GPU Board Serial Number: (?P<serial>[0-9A-Za-z]{1,32})\s*$", re.ASCII)


@dataclass(frozen=True)
class XidEvent:
    """One XID line: the code, the GPU's bus id, the time, the process if known, the text.

    `pci` is the canonical bus id (`0000:3b:00.0`), `pci_raw` what the line says. `time` is
    the line's stamp (wall clock if it has one, else seconds since boot); `uptime_s` is the
    dmesg seconds-since-boot stamp whenever the line carries one too. `recovery` is set on
    XID 154 lines, which state the recovery action the GPU needs.
    """

    code: int
    pci: str
    pid: int | None
    process: str | None
    message: str
    line: str
    pci_raw: str = ""
    time: LogTime | None = None
    uptime_s: float | None = None
    recovery: RecoveryChange | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "xid": self.code,
            "pci": self.pci,
            "pci_raw": self.pci_raw,
            "time": self.time.as_json() if self.time is not None else None,
            "uptime_s": self.uptime_s,
            "pid": self.pid,
            "process": self.process,
            "message": self.message,
            "recovery": self.recovery.as_json() if self.recovery is not None else None,
            "line": self.line,
        }


@dataclass(frozen=True)
class GpuIdentity:
    """What `NVRM: GPU at PCI:` and `NVRM: GPU Board Serial Number:` lines say about a GPU."""

    pci: str
    uuid: str
    serial: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"pci": self.pci, "uuid": self.uuid, "serial": self.serial}


def parse_xid_line(line: str) -> XidEvent | None:
    """The XID event on this log line, or None if the line is not an XID report."""
    found = _XID.search(line)
    if found is None:
        return None
    pci = normalise_bus_id(found["pci"])
    if pci is None:
        return None
    rest = line[found.end() :].strip()
    pid: int | None = None
    process: str | None = None
    owner = _PROCESS.match(rest)
    if owner is not None:
        pid = int(owner["pid"]) if owner["pid"][0] in "0123456789" else None
        name = (owner["name"] or "").strip()
        process = None if name in ("", "<unknown>") else name
        rest = rest[owner.end() :].strip()
    prefix = line[: found.start()]
    code = int(found["code"])
    return XidEvent(
        code=code,
        pci=pci,
        pid=pid,
        process=process,
        message=rest,
        line=line.strip(),
        pci_raw=found["pci"],
        time=line_time(prefix),
        uptime_s=uptime(prefix),
        recovery=parse_recovery(rest) if code == RECOVERY_XID else None,
    )


def parse_xid_lines(text: str) -> list[XidEvent]:
    """Every XID event in `text`, in log order; other lines are skipped."""
    events = (parse_xid_line(line) for line in text.splitlines())
    return [event for event in events if event is not None]


def parse_gpu_identities(text: str) -> dict[str, GpuIdentity]:
    """Bus id → UUID (and board serial) from the driver's `NVRM: GPU at PCI:` lines.

    The serial line names no GPU: it belongs to the `GPU at` line just before it.
    """
    gpus: dict[str, GpuIdentity] = {}
    last: str | None = None
    for line in text.splitlines():
        if "NVRM: GPU " not in line:
            continue
        if (found := _GPU_AT.search(line)) is not None:
            pci = normalise_bus_id(found["pci"])
            if pci is not None:
                gpus[pci] = GpuIdentity(pci=pci, uuid=found["uuid"])
                last = pci
            continue
        if last is not None and (serial := _SERIAL.search(line)) is not None:
            gpus[last] = GpuIdentity(pci=last, uuid=gpus[last].uuid, serial=serial["serial"])
            last = None
    return gpus

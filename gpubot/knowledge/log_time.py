"""Timestamps on kernel log lines, typed as the line writes them (dmesg, journal, syslog)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, timezone
from typing import Any, Literal

Kind = Literal["uptime", "iso", "ctime", "syslog"]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = "|".join(_MONTHS)
_WEEKDAY = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_CLOCK = r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})"
# Every quantifier is bounded: a kernel log can be large and its lines are outside data.
# dmesg: seconds since boot, `[ 1843.439662]`.
_UPTIME = re.compile(r"\[ {0,12}(?P<sec>[0-9]{1,10})\.(?P<frac>[0-9]{1,9})\]", re.ASCII)
# dmesg -T / --ctime: `[Fri Apr  5 21:29:39 2024]`, local time, no zone.
_CTIME = re.compile(
    rf"\[(?:{_WEEKDAY}) (?P<mon>{_MONTH}) {{1,2}}(?P<d>[0-9]{{1,2}}) {_CLOCK} (?P<y>[0-9]{{4}})\]",
    re.ASCII,
)
# dmesg --time-format iso (`2024-11-25T14:02:01,123456+00:00`), journalctl -o short-iso
# (`2024-11-25T14:02:01+0000`), RFC 3339 forwarders (`2026-04-22T21:30:51.870495804Z`).
_ISO = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})T" + _CLOCK + r"(?:[.,](?P<frac>[0-9]{1,9}))?"
    r"(?P<tz>Z|[+-][0-9]{2}:?[0-9]{2})?",
    re.ASCII,
)
# syslog / journalctl -o short: `Nov 25 14:02:01 host kernel:` at the start; no year.
_SYSLOG = re.compile(rf" {{0,8}}(?P<mon>{_MONTH}) {{1,2}}(?P<d>[0-9]{{1,2}}) {_CLOCK} ", re.ASCII)
# syslog stamps carry no year: their seconds count from the start of a leap year, so that
# Feb 29 exists and two stamps of one log compare in order (a log across New Year does not).
_SYSLOG_YEAR = 2000


@dataclass(frozen=True)
class LogTime:
    """One timestamp as written: `kind` says which fields are set.

    uptime: `uptime_s`, seconds since boot. iso: `at`, aware when the stamp has an offset.
    ctime: `at`, naive (dmesg -T prints local time without a zone). syslog: `month`, `day`
    and `clock`, no year.
    """

    kind: Kind
    text: str
    uptime_s: float | None = None
    at: datetime | None = None
    month: int | None = None
    day: int | None = None
    clock: time | None = None

    def seconds(self) -> float:
        """A position on this kind's own scale: only stamps of one kind compare."""
        if self.uptime_s is not None:
            return self.uptime_s
        if self.at is not None:
            at = self.at if self.at.tzinfo is not None else self.at.replace(tzinfo=UTC)
            return at.timestamp()
        assert self.month is not None
        assert self.day is not None
        assert self.clock is not None
        start = datetime(_SYSLOG_YEAR, self.month, self.day, tzinfo=UTC)
        return (start + _since_midnight(self.clock)).timestamp()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.kind == "uptime":
            out["seconds"] = self.uptime_s
        elif self.kind == "syslog":
            assert self.clock is not None
            out |= {"month": self.month, "day": self.day, "time": self.clock.isoformat()}
        else:
            assert self.at is not None
            out["datetime"] = self.at.isoformat()
        return out

    def __str__(self) -> str:
        if self.kind == "uptime":
            return f"{self.uptime_s:.6f}s"
        if self.kind == "syslog":
            assert self.clock is not None
            assert self.month is not None
            return f"{_MONTHS[self.month - 1]} {self.day:2d} {self.clock.isoformat()}"
        assert self.at is not None
        return self.at.isoformat(sep=" ")


def _since_midnight(clock: time) -> timedelta:
    return timedelta(hours=clock.hour, minutes=clock.minute, seconds=clock.second)


def _clock(found: re.Match[str], micro: int = 0) -> time | None:
    h, mi, s = int(found["h"]), int(found["mi"]), int(found["s"])
    if h > 23 or mi > 59 or s > 60:
        return None
    return time(h, mi, min(s, 59), micro)


def _micro(frac: str | None) -> int:
    # Nanosecond stamps (journald, Talos) keep their first six digits: datetime's resolution.
    return int((frac or "0")[:6].ljust(6, "0"))


def _zone(tz: str | None) -> timezone | None:
    if tz is None:
        return None
    if tz == "Z":
        return UTC
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        return None
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _date(year: int, month: int, day: int, clock: time, tz: timezone | None) -> datetime | None:
    try:
        return datetime.combine(datetime(year, month, day).date(), clock, tzinfo=tz)
    except ValueError:
        return None


def _iso(prefix: str) -> LogTime | None:
    found = _ISO.search(prefix)
    if found is None:
        return None
    clock = _clock(found, _micro(found["frac"]))
    tz = _zone(found["tz"])
    if clock is None or (found["tz"] is not None and tz is None):
        return None
    at = _date(int(found["y"]), int(found["mo"]), int(found["d"]), clock, tz)
    return LogTime(kind="iso", text=found[0], at=at) if at is not None else None


def _ctime(prefix: str) -> LogTime | None:
    found = _CTIME.search(prefix)
    if found is None or (clock := _clock(found)) is None:
        return None
    month = _MONTHS.index(found["mon"]) + 1
    at = _date(int(found["y"]), month, int(found["d"]), clock, None)
    return LogTime(kind="ctime", text=found[0][1:-1], at=at) if at is not None else None


def _syslog(prefix: str) -> LogTime | None:
    found = _SYSLOG.match(prefix)
    if found is None or (clock := _clock(found)) is None:
        return None
    month, day = _MONTHS.index(found["mon"]) + 1, int(found["d"])
    if _date(_SYSLOG_YEAR, month, day, clock, None) is None:
        return None
    return LogTime(kind="syslog", text=found[0].strip(), month=month, day=day, clock=clock)


def _uptime(prefix: str) -> LogTime | None:
    found = _UPTIME.search(prefix)
    if found is None:
        return None
    seconds = float(f"{found['sec']}.{found['frac']}")
    return LogTime(kind="uptime", text=found[0][1:-1].strip(), uptime_s=seconds)


def uptime(prefix: str) -> float | None:
    """The dmesg seconds-since-boot stamp in `prefix`, or None."""
    stamp = _uptime(prefix)
    return None if stamp is None else stamp.uptime_s


def line_time(prefix: str) -> LogTime | None:
    """The most telling stamp in the text before a kernel message: a wall-clock one (ISO,
    dmesg -T, syslog), else dmesg's seconds since boot."""
    return _iso(prefix) or _ctime(prefix) or _syslog(prefix) or _uptime(prefix)

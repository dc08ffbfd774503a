"""Kernel log timestamps are typed as the line writes them: uptime, ISO, dmesg -T, syslog."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, timezone

import pytest

from gpubot.knowledge.log_time import line_time, uptime


def test_dmesg_seconds_since_boot() -> None:
    stamp = line_time("[ 1843.439662] ")
    assert stamp is not None
    assert (stamp.kind, stamp.uptime_s, stamp.at) == ("uptime", 1843.439662, None)


def test_dmesg_ctime_is_naive_local_time() -> None:
    stamp = line_time("[Mon Aug  5 03:54:13 2024] ")
    assert stamp is not None
    assert (stamp.kind, stamp.at) == ("ctime", datetime(2024, 8, 5, 3, 54, 13))


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        # dmesg --time-format iso: comma before the microseconds.
        ("2024-11-25T14:02:01,123456+00:00 ", datetime(2024, 11, 25, 14, 2, 1, 123456, UTC)),
        # journalctl -o short-iso: offset without a colon.
        (
            "2024-11-25T15:02:01+0100 node kernel: ",
            datetime(2024, 11, 25, 15, 2, 1, tzinfo=timezone(timedelta(hours=1))),
        ),
        # RFC 3339 in nanoseconds: datetime keeps the first six digits.
        (
            "192.168.11.119: kern: warning: [2026-04-22T21:30:51.870495804Z]: ",
            datetime(2026, 4, 22, 21, 30, 51, 870495, UTC),
        ),
    ],
)
def test_iso_8601_keeps_its_offset(prefix: str, expected: datetime) -> None:
    stamp = line_time(prefix)
    assert stamp is not None
    assert stamp.kind == "iso"
    assert stamp.at == expected


def test_syslog_has_no_year_and_says_so() -> None:
    stamp = line_time("Nov 25 14:02:01 gpu-node-07 kernel: [176830.774761] ")
    assert stamp is not None
    assert (stamp.kind, stamp.month, stamp.day, stamp.clock) == ("syslog", 11, 25, time(14, 2, 1))
    assert stamp.at is None
    assert stamp.as_json() == {
        "kind": "syslog",
        "text": "Nov 25 14:02:01",
        "month": 11,
        "day": 25,
        "time": "14:02:01",
    }
    assert uptime("Nov 25 14:02:01 gpu-node-07 kernel: [176830.774761] ") == 176830.774761


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "kernel: ",
        "Feb 30 10:00:00 host kernel: ",  # no such day
        "Nov 25 25:61:00 host kernel: ",  # no such time
        "2024-13-01T00:00:00Z ",
        "[Mon Aug  5 03:54:13 \uff12\uff10\uff12\uff14] ",  # full-width digits
        "[ ١٢٣.٤٥٦] ",  # Arabic-Indic digits
    ],
)
def test_no_stamp_rather_than_a_wrong_one(prefix: str) -> None:
    assert line_time(prefix) is None


# Verbatim dmesg output for each --time-format, from util-linux/util-linux#2648 (comment by
# rishabh-thukral, 2023-12-22). The stamp forms are what matter here, not the message.
UTIL_LINUX_2648 = [
    ("[17159596.699613] device vethab20cf5 entered promiscuous mode", "uptime", "17159596.699613"),
    (
        "[17159596.699613] [Fri Dec 22 12:26:24 2023] device vethab20cf5 entered promiscuous mode",
        "ctime",
        "Fri Dec 22 12:26:24 2023",
    ),
    (
        "[17159596.699613] [Fri Dec 22 12:26:24 2023] [  +0.000000] "
        "2023-12-22T12:26:24,559615-08:00 device vethab20cf5 entered promiscuous mode",
        "iso",
        "2023-12-22T12:26:24,559615-08:00",
    ),
]


@pytest.mark.parametrize(("line", "kind", "text"), UTIL_LINUX_2648)
def test_real_dmesg_time_formats(line: str, kind: str, text: str) -> None:
    stamp = line_time(line.split(" device ")[0])
    assert stamp is not None
    assert (stamp.kind, stamp.text) == (kind, text)
    assert uptime(line) == 17159596.699613
    if kind == "iso":
        assert stamp.at == datetime(2023, 12, 22, 12, 26, 24, 559615, timezone(-timedelta(hours=8)))


def test_dmesg_relative_stamps_are_not_uptime() -> None:
    # `[  +0.000000]` (dmesg --time-format reltime / -d) is a delta, not seconds since boot.
    assert line_time("[  +0.000000] ") is None

"""Numbers and identifiers read from outside text: ASCII only, full-matched.

`str.isdigit()` is true for "²" and "٧٩", which `int()` then rejects or reads as 79; a
trailing newline passes `re.match(r"…$")`. Everything here full-matches ASCII instead.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]{1,18}", re.ASCII)
_GPU_UUID = re.compile(r"(GPU|MIG)-[0-9A-Za-z-]{1,64}", re.ASCII)
_CLUSTER = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", re.ASCII)
_FINGERPRINT = re.compile(r"[A-Za-z0-9._:-]{1,128}", re.ASCII)


def ascii_int(text: str) -> int | None:
    """The value of a string of ASCII digits (at most 18), or None."""
    return int(text) if _DIGITS.fullmatch(text) else None


def natural_key(text: str) -> tuple[int, str]:
    """Sort key that puts "2" before "10" and anything not numeric after the numbers."""
    value = ascii_int(text)
    return (value, "") if value is not None else (1 << 62, text)


def is_gpu_uuid(text: str) -> bool:
    """NVML's GPU or MIG UUID form (`GPU-5a1b…`, `MIG-…`)."""
    return _GPU_UUID.fullmatch(text) is not None


def is_cluster_name(text: str) -> bool:
    return _CLUSTER.fullmatch(text) is not None


def is_fingerprint(text: str) -> bool:
    """Alertmanager's hex fingerprints, or the agent's `node:xid:…` style keys."""
    return _FINGERPRINT.fullmatch(text) is not None

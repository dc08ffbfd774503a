"""PCI bus ids as NVIDIA tools print them, normalised to one form: `0000:3b:00.0`."""

from __future__ import annotations

import re

# The driver prints `PCI:0000:3b:00` (no function), the kernel `0000:3b:00.0`, nvidia-smi
# `00000000:3B:00.0` (a 32-bit domain), lspci `3b:00.0` (domain 0 left out). All name the
# same device: domain, bus, device (5 bits) and function (3 bits), in hex.
_BUS_ID = re.compile(
    r"(?:PCI:)?(?:(?P<domain>[0-9A-Fa-f]{1,8}):)?(?P<bus>[0-9A-Fa-f]{2}):"
    r"(?P<device>[0-9A-Fa-f]{2})(?:\.(?P<function>[0-7]))?",
    re.ASCII,
)
_DOMAIN_MAX = 0xFFFF_FFFF
_DEVICE_MAX = 0x1F


def normalise_bus_id(text: str) -> str | None:
    """`0000:3b:00.0` for any spelling of that bus id, or None when `text` is not one."""
    found = _BUS_ID.fullmatch(text.strip())
    if found is None:
        return None
    domain = int(found["domain"] or "0", 16)
    device = int(found["device"], 16)
    if domain > _DOMAIN_MAX or device > _DEVICE_MAX:
        return None
    function = int(found["function"] or "0")
    return f"{domain:04x}:{int(found['bus'], 16):02x}:{device:02x}.{function}"

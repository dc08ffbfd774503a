"""Text for a terminal or a log line: control characters shown as visible escapes."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL, C1: ESC and CSI start sequences


def safe(value: object) -> str:
    r"""One value as terminal text: control characters as visible escapes (`\x1b`, `\n`), so
    nothing from outside starts a line of its own or an escape sequence. Idempotent."""
    text = "" if value is None else str(value)
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)

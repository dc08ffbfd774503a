"""Logging for `gpubot serve`: set up once, JSON or text lines on stderr, secrets redacted.

Modules log through `logging.getLogger(__name__)` and pass structured fields as `extra`
(`event`, `run_id`, `incident_id`, `cluster`, `reason`, …). `configure_logging` installs one
handler on the root logger, so gpubot's lines, uvicorn's and the libraries' share a format.
Every record passes `SafeRecords` first: known secret values and URL passwords become `***`,
and a message longer than MAX_MESSAGE is cut, so no input can make a line unbounded. The text
format also escapes control characters (JSON escapes them by itself), so a newline in an
alert label cannot start a forged line.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable
from typing import Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

from gpubot.domain.terminal import safe

LogFormat = Literal["auto", "json", "text"]
LogLevel = Literal["debug", "info", "warning", "error"]
MAX_MESSAGE = 2000  # characters of one message (and of one structured field)
# The structured fields gpubot's own records carry, in the order the text format shows them.
FIELDS = (
    "event",
    "run_id",
    "incident_id",
    "cluster",
    "runbook",
    "step",
    "action",
    "result",
    "status",
    "path",
    "reason",
    "count",
    "node",
    "gpu",
    "xid",
)
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*):[^@\s/]*@")
_PLAIN = re.compile(r"[\w.:/@,+=-]+")
_MIN_SECRET = 6  # shorter values would redact ordinary words


def redact_url(url: str) -> str:
    """`postgresql://user:pass@host/db` → `postgresql://user:***@host/db` (anywhere in text)."""
    return _URL_PASSWORD.sub(r"\g<head>:***@", url)


def escape_control(text: str) -> str:
    r"""Control characters as visible escapes (`\n`, `\x1b`): one record stays one line."""
    return safe(text)


def _cap(text: str) -> str:
    if len(text) <= MAX_MESSAGE:
        return text
    return f"{text[:MAX_MESSAGE]}… ({len(text) - MAX_MESSAGE} more characters)"


class SafeRecords(logging.Filter):
    """Redacts secrets and caps lengths in every record before any formatter sees it."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        found = {s for s in secrets if s and len(s) >= _MIN_SECRET}
        self._secrets = sorted(found, key=len, reverse=True)  # a longer one first

    def clean(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _cap(redact_url(text))

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a call whose arguments do not fit its format: keep both, raw
            text = f"{record.msg!s} {record.args!r}"
        message = self.clean(text)
        record.msg, record.args = message, None
        for name in FIELDS:
            value = record.__dict__.get(name)
            if isinstance(value, str):
                record.__dict__[name] = self.clean(value)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            # Formatters print exc_text when exc_info is gone: only the cleaned copy is left.
            record.exc_text = self.clean_traceback(record.exc_text)
            record.exc_info = None
        return True

    def clean_traceback(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return redact_url(text)


class TextFormatter(logging.Formatter):
    """`2026-11-25 16:40:00,123 INFO gpubot.web.server: listening … [event=… reason=…]`.

    The message and the fields are escaped; a traceback's lines are indented, so nothing in
    one can pass for a record of its own."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_text
        record.exc_text = None  # the traceback is added below, indented
        exc_info, record.exc_info = record.exc_info, None
        try:
            line = escape_control(super().format(record))
        finally:
            record.exc_text, record.exc_info = saved, exc_info
        fields = [
            f"{name}={_quoted(str(value))}"
            for name in FIELDS
            if (value := record.__dict__.get(name)) is not None
        ]
        if fields:
            line += f" [{' '.join(fields)}]"
        trace = record.exc_text or (self.formatException(exc_info) if exc_info else "")
        if trace:
            line += "".join(f"\n    | {escape_control(t)}" for t in trace.splitlines())
        return line


def _quoted(value: str) -> str:
    """A field's value as is when it is one plain word, else in double quotes, escaped."""
    if _PLAIN.fullmatch(value):
        return value
    return escape_control(json.dumps(value, ensure_ascii=False))


def json_formatter() -> logging.Formatter:
    """One JSON object per line: ts, level, logger, message, then the structured fields."""
    return JsonFormatter(
        "{levelname}{name}{message}",
        style="{",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="ts",  # ISO 8601, UTC
    )


def resolve_format(fmt: LogFormat, stream: TextIO) -> Literal["json", "text"]:
    """`auto`: text on a terminal (a person reading), JSON elsewhere (a container's log)."""
    if fmt != "auto":
        return fmt
    isatty = getattr(stream, "isatty", None)
    return "text" if isatty is not None and isatty() else "json"


def configure_logging(
    *,
    fmt: LogFormat = "auto",
    level: LogLevel = "info",
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send every record to `stream` (stderr) in one format; gpubot's loggers at `level`,
    other libraries' at WARNING (or `level` when it is higher). Calling it again replaces
    the handler it installed before. Returns the handler (tests remove it)."""
    out = stream if stream is not None else sys.stderr
    handler = logging.StreamHandler(out)
    handler.set_name("gpubot")
    handler.addFilter(SafeRecords(secrets))
    json = resolve_format(fmt, out) == "json"
    handler.setFormatter(json_formatter() if json else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "gpubot"]:
        root.removeHandler(old)
    root.addHandler(handler)
    wanted = logging.getLevelNamesMapping()[level.upper()]
    root.setLevel(max(wanted, logging.WARNING))
    logging.getLogger("gpubot").setLevel(wanted)
    # The audit chain head is an anchor outside the database: kept at any level.
    logging.getLogger("gpubot.audit").setLevel(min(wanted, logging.INFO))
    return handler

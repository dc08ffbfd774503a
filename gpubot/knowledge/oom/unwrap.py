"""A log line as the workload printed it, out of the wrappers that collectors put around it.

The same failure reaches the triage through many hands: a container runtime's JSON file
(`{"log":"...\\n","stream":"stderr","time":"..."}`), the CRI log format (`<time> stderr F ...`),
`kubectl logs --prefix --timestamps` (`[pod/name/container] 2024-01-01T00:00:00.000Z ...`), a
terminal's ANSI colours, Windows line ends, or a JSON-escaped message whose newlines are the
two characters `\\n`. The families are written for the printed text, so every line is unwrapped
here, once, before any family reads it. Each step is anchored or linear in the line's length.
"""

from __future__ import annotations

import json
import re

# CSI sequences (colours, cursor moves) and the two-character escapes some loggers leave.
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]", re.ASCII)
_RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)"
# kubectl logs --prefix: "[pod/name/container] "; --timestamps: an RFC 3339 time and a space.
_KUBECTL = re.compile(r"^\[(?:pod|job|deployment|statefulset)/[^\]\s]{1,300}\] ", re.ASCII)
_KUBECTL_TIME = re.compile(r"^" + _RFC3339 + r" ", re.ASCII)
# The CRI log format (containerd, CRI-O): time, stream, partial/full tag, message.
_CRI = re.compile(r"^" + _RFC3339 + r" (?:stdout|stderr) [PF] ", re.ASCII)
# A container runtime's JSON log line; the message is the value of "log".
_JSON_LOG = re.compile(r'^\{\s{0,4}"log"\s{0,4}:\s{0,4}"', re.ASCII)
# A JSON-escaped message: its newlines and tabs are the two characters \n and \t.
_ESCAPED_NEWLINE = re.compile(r"(?:\\r)?\\n")
_ESCAPED_NEWLINES_TO_SPLIT = 2  # one \n is as likely a Windows path ("C:\new") as an escape
# A collected line opens into at most this many printed ones (a long JSON-escaped stack trace
# has a few hundred); the rest stays in the last, so hostile input cannot multiply the lines.
MAX_LINES_PER_LINE = 2000


def _from_json(line: str) -> str:
    """The "log" value of a runtime's JSON line, or the line itself if it is not one."""
    try:
        record = json.loads(line)
    except ValueError:
        return line
    if isinstance(record, dict) and isinstance(record.get("log"), str):
        return str(record["log"])
    return line


def _strip(line: str) -> str:
    """`line` without colours, a trailing CR, and a kubectl or CRI prefix."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    line = line.rstrip("\r")
    if line.startswith("["):
        line = _KUBECTL.sub("", line, count=1)
    if line[4:5] == "-" and line[:4].isdigit():  # an RFC 3339 time's year
        line = _CRI.sub("", line, count=1)
        line = _KUBECTL_TIME.sub("", line, count=1)
    return line


def unwrap(line: str) -> list[str]:
    """The printed lines inside one collected `line`: usually one; a JSON value or an escaped
    message may hold several, at most MAX_LINES_PER_LINE (the rest stays in the last)."""
    line = _strip(line)
    if line.startswith("{") and _JSON_LOG.match(line):
        line = _strip(_from_json(line).rstrip("\n"))
    if "\n" in line:  # a decoded JSON value may hold several lines
        pieces = [_strip(piece) for piece in line.split("\n", MAX_LINES_PER_LINE - 1)]
    else:
        pieces = [line]
    printed: list[str] = []
    for i, piece in enumerate(pieces):
        room = MAX_LINES_PER_LINE - len(printed) - (len(pieces) - i - 1)
        if room > 1 and "\\n" in piece and piece.count("\\n") >= _ESCAPED_NEWLINES_TO_SPLIT:
            split = _ESCAPED_NEWLINE.split(piece, room - 1)
            printed += [part.replace("\\t", "\t") for part in split]
        else:
            printed.append(piece)
    return printed

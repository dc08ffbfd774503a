"""One way to frame a request body: a request that could be read two ways is refused.

h11 parses every request; this adds the refusals RFC 9112 allows and a server behind a
proxy needs against request smuggling (§6.1, §6.3): `Transfer-Encoding` together with
`Content-Length`, and `Content-Length` given more than once or as a list (h11 merges equal
values into one, which would hide from us that a proxy in front may have read them
otherwise). h11 itself already refuses any transfer coding but a lone `chunked`, and
conflicting lengths. A refusal is h11's own `RemoteProtocolError`, so uvicorn answers it as
it answers any malformed request: 400 with `Connection: close`, and the connection closed
before a byte after the head is read as another request.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import h11

log = logging.getLogger(__name__)

_HEAD_END = re.compile(rb"\n\r?\n")  # where h11 ends a request head
_LINE = re.compile(rb"\r?\n")


def framing_problem(headers: list[tuple[bytes, bytes]], raw_head: bytes | None) -> str | None:
    """Why this request's body framing is ambiguous, or None. `headers` as h11 read them
    (names lower-cased); `raw_head` the bytes of the head as they arrived."""
    names = {name for name, _ in headers}
    if b"transfer-encoding" in names and b"content-length" in names:
        return "both Transfer-Encoding and Content-Length"
    lengths = _content_lengths(raw_head) if raw_head is not None else []
    if len(lengths) > 1:
        return "Content-Length given more than once"
    if lengths and b"," in lengths[0]:
        return "Content-Length given as a list"
    return None


def _content_lengths(raw_head: bytes) -> list[bytes]:
    """The value of each Content-Length field line, with any folded continuation lines."""
    fields: list[bytearray] = []
    for line in _LINE.split(raw_head)[1:]:  # after the request line
        if line[:1] in (b" ", b"\t") and fields:  # obs-fold: h11 joins it to the field above
            fields[-1] += b" " + line.strip()
        else:
            fields.append(bytearray(line))
    found = []
    for field in fields:
        name, colon, value = bytes(field).partition(b":")
        if colon and name.strip().lower() == b"content-length":
            found.append(value.strip())
    return found


class FramingConnection(h11.Connection):
    """h11's server connection, refusing (as a protocol error) a body framed two ways.

    While a request head is awaited, the bytes received are kept beside h11's buffer (h11
    keeps only its merged reading of them) and searched for the head's end from where the
    last search stopped, so a head trickled a byte at a time costs linear work.
    """

    _head: bytearray | None = None  # bytes received since the last request's head
    _searched = 0

    def receive_data(self, data: bytes) -> None:
        if self.their_state is h11.IDLE:
            self._awaiting_head().extend(data)
        super().receive_data(data)

    def next_event(self) -> Any:
        raw_head = self._complete_head() if self.their_state is h11.IDLE else None
        event = super().next_event()
        if isinstance(event, h11.Request):
            self._head = None
            problem = framing_problem(list(event.headers), raw_head)
            if problem is not None:
                log.warning(
                    "refused a request: ambiguous framing: %s",
                    problem,
                    extra={"event": "http.refused", "status": 400, "reason": problem},
                )
                raise h11.RemoteProtocolError(f"ambiguous request framing: {problem}", 400)
        return event

    def _awaiting_head(self) -> bytearray:
        if self._head is None:  # a new head: it starts with what h11 holds unread
            self._head = bytearray(self.trailing_data[0])
            self._searched = 0
        return self._head

    def _complete_head(self) -> bytes | None:
        head = self._awaiting_head()
        end = _HEAD_END.search(head, max(0, self._searched - 2))
        if end is None:
            self._searched = len(head)
            return None
        return bytes(head[: end.start()])

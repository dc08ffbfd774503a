"""A request body framed two ways is a protocol error before any handler runs."""

from __future__ import annotations

import h11
import pytest

from gpubot.web.framing import FramingConnection, framing_problem


def _request(head: bytes, *, pieces: int = 1) -> object:
    conn = FramingConnection(h11.SERVER)
    step = max(1, len(head) // pieces)
    for start in range(0, len(head), step):  # a head trickled in pieces is read the same
        conn.receive_data(head[start : start + step])
    return conn.next_event()


@pytest.mark.parametrize("pieces", [1, 7, 1000])
@pytest.mark.parametrize(
    "fields",
    [
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        b"Content-Length: 2\r\nContent-Length: 2\r\n",
        b"Content-Length: 2, 2\r\n",
        b"content-length: 2\r\n\t, 2\r\n",
    ],
)
def test_ambiguous_framing_is_a_protocol_error(fields: bytes, pieces: int) -> None:
    head = b"POST / HTTP/1.1\r\nHost: a\r\n" + fields + b"\r\n"
    with pytest.raises(h11.RemoteProtocolError, match="ambiguous request framing"):
        _request(head, pieces=pieces)


@pytest.mark.parametrize(
    "fields",
    [b"Content-Length: 2\r\n", b"Transfer-Encoding: chunked\r\n", b"X-Content-Length: 1, 2\r\n"],
)
def test_one_framing_is_read_as_h11_reads_it(fields: bytes) -> None:
    event = _request(b"POST / HTTP/1.1\r\nHost: a\r\n" + fields + b"\r\n", pieces=5)
    assert isinstance(event, h11.Request)


def test_the_second_request_on_a_connection_is_checked_too() -> None:
    """Pipelined: the second head arrived with the first, so it is read from h11's buffer."""
    conn = FramingConnection(h11.SERVER)
    conn.receive_data(
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"
    )
    assert isinstance(conn.next_event(), h11.Request)
    assert isinstance(conn.next_event(), h11.EndOfMessage)
    conn.send(h11.Response(status_code=200, headers=[("content-length", "0")]))
    conn.send(h11.EndOfMessage())
    conn.start_next_cycle()
    with pytest.raises(h11.RemoteProtocolError, match="more than once"):
        conn.next_event()


def test_framing_problem_names_the_ambiguity() -> None:
    both = [(b"transfer-encoding", b"chunked"), (b"content-length", b"1")]
    assert framing_problem(both, None) == "both Transfer-Encoding and Content-Length"
    assert framing_problem([(b"content-length", b"1")], b"POST / HTTP/1.1\r\n") is None

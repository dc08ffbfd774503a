"""`gpubot serve`'s address, checked before anything starts: a bad or busy one is one line."""

from __future__ import annotations

import errno
import socket

from gpubot.errors import InputError


def check_port(port: int | None) -> None:
    """InputError for a --port that is no TCP port (0 is the config's "any free port")."""
    if port is not None and not 1 <= port <= 65535:
        raise InputError(f"--port {port}: not a TCP port (1 to 65535)")


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listen_problem(host: str, port: int) -> str | None:
    """Why `serve` could not listen on host:port (in use, not this machine's), or None.

    A trial bind with the options the server's own bind uses (SO_REUSEADDR), released at
    once; the server binds for real moments later, so a port taken in between still fails
    there, with the web server's own message.
    """
    if port == 0:
        return None  # any free port: nothing to be busy
    where = _address(host, port)
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.create_server((host, port), family=family):
            pass
    except socket.gaierror as exc:
        return f"cannot listen on {where}: {exc.strerror}"
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"{where}: address already in use (another process listens there)"
        return f"cannot listen on {where}: {exc.strerror or exc}"
    return None

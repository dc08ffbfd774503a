"""Helpers for tests that start gpubot (or a real server) as a process on loopback."""

from __future__ import annotations

import socket

from waiting import wait_until

__all__ = ["free_port", "wait_until"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

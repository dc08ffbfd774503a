"""Chat is best effort: the store and the audit trail are the record, so a message that
cannot be posted is logged and the flow goes on."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

log = logging.getLogger(__name__)


async def best_effort(call: Awaitable[object], what: str) -> bool:
    """Await a chat call; on any failure log `could not <what>` with the error and return
    False (the caller's durable record already holds what the message would have said)."""
    try:
        await call
    except Exception:  # a chat outage or a refused message must not stop the engine
        log.exception("could not %s", what)
        return False
    return True

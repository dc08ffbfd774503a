"""A notify step's configured mention stays live in Slack; the alert text beside it does not."""

from __future__ import annotations

from typing import Any

from gpubot.actions.base import ActionContext
from gpubot.actions.messaging import NotifyParams, run_notify
from gpubot.domain.results import Message, Text
from gpubot.engine.clock import FakeClock
from gpubot.slack import blocks


async def test_notify_mention_is_live_and_the_message_is_escaped() -> None:
    said: list[tuple[str, tuple[str, ...]]] = []

    async def say(text: str, mentions: tuple[str, ...]) -> None:
        said.append((text, mentions))

    ctx = ActionContext(cluster=None, clock=FakeClock(), actor="system", reason="r", say=say)  # type: ignore[arg-type]
    # The message is templated from alert text: it may hold anything.
    params = NotifyParams(message="XID on <!channel> <@U0ADMIN>", mention="S0ONCALL")
    out: Any = await run_notify(ctx, params)
    [(text, mentions)] = said
    assert mentions == ("<!subteam^S0ONCALL>",)
    assert out == {"posted": text}
    # As the recorder posts it: the step's title, the text, the mentions it was given.
    [_, section] = blocks.message_blocks(Message("xid79 > tell", (Text(text),), mentions))
    assert section["text"]["text"] == (
        "<!subteam^S0ONCALL> XID on &lt;!channel&gt; &lt;@U0ADMIN&gt;"
    )

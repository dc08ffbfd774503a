"""Shared by the agent's observability tests: a node's tokens, options, a fake clock, and
readers of the text log and of the Prometheus exposition."""

from __future__ import annotations

import io

from gpubot.agent.api import AgentTokens
from gpubot.agent.server import AgentOptions
from gpubot.domain.control.agent_tokens import node_token

MASTER = "s3cret-agent-master"
NODE = "gpu-node-12"  # runs idle pods: GPUs 0-4 held, 5-7 free
MUTATE = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")
WRONG = "wrong-but-long-token-value-0123456789"


def agent_opts(**kw: object) -> AgentOptions:
    base: dict[str, object] = {
        "tokens": AgentTokens(read=READ, mutate=MUTATE),
        "node": NODE,
        "cluster": "sim",
        "host": "127.0.0.1",
        "port": 0,
        "driver_name": "simulated",
    }
    return AgentOptions(**{**base, **kw})  # type: ignore[arg-type]


def log_lines(stream: io.StringIO, event: str) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if f"event={event}" in line]


def sample(text: str, series: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None

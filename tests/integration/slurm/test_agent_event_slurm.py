"""An XID event from the agent on a Slurm node (as the systemd unit posts it) drains that node."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from slurm_cluster import SlurmCluster
from slurm_engine import CLUSTER, gpu_uuid, make_bot

from gpubot.agent.driver import XidEvent
from gpubot.agent.xid_watcher import xid_alert
from gpubot.backends.simulated.scenarios import inject_xid
from gpubot.backends.store import SqlStore
from gpubot.domain.control.agent_tokens import node_token
from gpubot.domain.runbooks.runs import RunStatus
from gpubot.web.app import create_app

MASTER = "slurm-bot-master"


async def test_agent_xid_event_quarantines_the_slurm_node(
    slurm: SlurmCluster, store: SqlStore
) -> None:
    bot = make_bot(slurm, store)
    inject_xid(bot.gpus, node="gpu002", gpu=1)
    event = XidEvent(gpu=1, uuid=gpu_uuid("gpu002", 1), xid=79, at=datetime.now(UTC))
    body = xid_alert(event, node="gpu002", cluster=CLUSTER, window_s=300)
    app = create_app(bot.service, agent_token=MASTER)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://bot"
    ) as client:
        # Another node's token is refused: an agent speaks for its own node only.
        token = node_token(master=MASTER, node="gpu001", scope="read")
        refused = await client.post(
            "/agent/events", json=body, headers={"authorization": f"Bearer {token}"}
        )
        assert refused.status_code == 403
        token = node_token(master=MASTER, node="gpu002", scope="read")
        r = await client.post(
            "/agent/events", json=body, headers={"authorization": f"Bearer {token}"}
        )
        assert r.status_code == 200, r.text
    await bot.service.wait_idle()
    [run] = await store.list_runs()
    await bot.wait_status(run.id, RunStatus.WAITING_APPROVAL, RunStatus.FAILED)
    assert await bot.pending(run.id) == "drain", (await store.get_run(run.id)).note
    node = slurm.node_json("gpu002")
    assert slurm.operator_flags("gpu002") == ["DRAIN"]
    assert str(node["reason"]).startswith(f"gpubot xid79/cordon run={run.id} ")

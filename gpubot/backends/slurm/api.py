"""The cluster ports over Slurm: drain is quarantine, requeue is eviction, resume is release."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from pydantic import ValidationError

from gpubot.backends.slurm.commands import SlurmCommands
from gpubot.backends.slurm.convert import node_info
from gpubot.backends.slurm.joblog import JobOutput
from gpubot.backends.slurm.jobs import DrainJobs, SlurmJobPods
from gpubot.backends.slurm.models import SlurmNode, SlurmNodes
from gpubot.domain.fleet.cluster import FleetView, NodeInfo, Taint
from gpubot.domain.fleet.slurm import REASON_PREFIX, SERVICE_PREFIX, with_taint
from gpubot.domain.k8s_names import check_node_name
from gpubot.domain.runbooks.left_behind import REBOOT_LABEL, SERVICE_LABEL
from gpubot.errors import InputError, NotFoundError, PermanentStepError

log = logging.getLogger(__name__)

RebootNext = Literal["down", "resume"]
_REASON_MAX = 240  # slurmctld keeps the whole reason; sinfo's default column shows ~20


def clean_reason(text: str) -> str:
    """A drain reason as scontrol takes it: printable ASCII on one line, capped."""
    flat = "".join(c if " " <= c <= "~" else " " for c in text)
    return " ".join(flat.split())[:_REASON_MAX]


class SlurmKubeApi(SlurmJobPods):
    """KubeApi over Slurm's commands, one cluster (one slurm.conf).

    Reads are `sinfo --json` and `squeue --json` (Slurm 22.05 prints every node and job and
    filters nothing with --json, so this filters); writes are `scontrol update`, `scontrol
    requeue`, `scancel` and `scontrol reboot`, each an argument list. Slurm keeps no object
    versions: a write re-reads the node just before, which narrows a race but cannot close it.
    """

    def __init__(
        self,
        commands: SlurmCommands,
        *,
        drain_jobs: DrainJobs = "requeue",
        reboot_next_state: RebootNext = "down",
        job_output: JobOutput | None = None,
        dry_run: bool = False,
    ) -> None:
        self.cmd = commands
        self.drain_jobs = drain_jobs
        self.reboot_next_state = reboot_next_state
        self.job_output = job_output or JobOutput(roots=())
        self.dry_run = dry_run

    # -- reads --

    async def _nodes(self) -> list[SlurmNode]:
        data = await self.cmd.run_json("sinfo")
        try:
            return list(SlurmNodes.model_validate(data).nodes)
        except ValidationError as exc:
            raise PermanentStepError(
                f"sinfo --json: unexpected shape ({exc.error_count()} errors)"
            ) from exc

    async def _node(self, node: str) -> SlurmNode:
        try:
            check_node_name(node)
        except ValueError as exc:
            raise InputError(f"not asking Slurm: {exc}") from exc
        for found in await self._nodes():
            if found.name == node:
                return found
        raise NotFoundError(f"Slurm has no node {node!r}")

    async def list_nodes(self) -> list[NodeInfo]:
        return [node_info(n) for n in await self._nodes() if _named(n.name)]

    async def get_node(self, *, node: str, cached: bool = False) -> NodeInfo:
        return node_info(await self._node(node))

    async def warm(self, *, timeout_s: float) -> bool:
        return True  # no cache: every read asks slurmctld

    async def gpu_fleet(self) -> FleetView:
        nodes = await self.list_nodes()
        gpu = [n for n in nodes if n.is_gpu_node]
        return FleetView(
            gpu_nodes=frozenset(n.name for n in gpu),
            cordoned=frozenset(n.name for n in gpu if n.unschedulable),
            as_of=datetime.now(UTC),
        )

    # -- node writes --

    async def set_unschedulable(
        self,
        *,
        node: str,
        value: bool,
        actor: str,
        reason: str,
        dry_run: bool = False,
        expect_version: str = "",
    ) -> None:
        """True: DRAIN with `reason` (running jobs go on, nothing new starts). False: RESUME,
        only while the node's reason is still gpubot's; a drain someone else made (an admin,
        a health check) is theirs, and this refuses it with their reason."""
        current = await self._node(node)
        if value:
            if (current.drain or current.down) and not current.reason.startswith(REASON_PREFIX):
                raise PermanentStepError(
                    _foreign(current, "not draining it again over their reason")
                )
            text = clean_reason(reason if reason.startswith(REASON_PREFIX) else f"gpubot {reason}")
            if dry_run or self.dry_run:
                return
            await self.cmd.run(
                "scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={text}"
            )
            return
        if not (current.drain or current.down):
            return
        if not current.reason.startswith(REASON_PREFIX):
            raise PermanentStepError(_foreign(current, "gpubot resumes only its own drain"))
        if dry_run or self.dry_run:
            return
        await self.cmd.run("scontrol", "update", f"NodeName={node}", "State=RESUME")

    async def set_taint(
        self, *, node: str, taint: Taint, present: bool, dry_run: bool = False
    ) -> None:
        """Slurm has no taints: gpubot keeps its own in its drain reason ("… [key=value:effect]"),
        so they exist only while gpubot's drain does. Adding one needs that drain; removing
        one from a node gpubot has not drained is nothing to do. A dry run (a plan, read
        before the runbook's drain step has run) only checks that the node exists."""
        current = await self._node(node)
        ours = (current.drain or current.down) and current.reason.startswith(REASON_PREFIX)
        if not ours:
            if present and not (dry_run or self.dry_run):
                raise PermanentStepError(
                    f"{node}: Slurm has no taints, and gpubot keeps {taint} in its own drain "
                    "reason, but gpubot has not drained this node (drain it first)"
                )
            return
        text = with_taint(current.reason, taint, present=present, limit=_REASON_MAX)
        if text == current.reason or dry_run or self.dry_run:
            return
        await self.cmd.run(
            "scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={text}"
        )

    async def set_node_metadata(
        self,
        *,
        node: str,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        """The notes that mean something to Slurm: a reboot request (`scontrol reboot ASAP
        nextstate=…`: it drains, reboots when the node is idle) and hardware service (a drain
        reason starting "gpubot hardware-service: "). Others have no place in Slurm."""
        labels = labels or {}
        notes = {k: v for k, v in (annotations or {}).items() if v}
        current = await self._node(node)
        if REBOOT_LABEL in labels:
            if labels[REBOOT_LABEL] is None:
                if not self.dry_run:
                    await self.cmd.run("scontrol", "cancel_reboot", node)
            else:
                why = clean_reason(f"gpubot reboot: {next(iter(notes.values()), 'requested')}")
                if not self.dry_run:
                    await self.cmd.run(
                        "scontrol",
                        "reboot",
                        "ASAP",
                        f"nextstate={self.reboot_next_state.upper()}",
                        f"reason={why}",
                        node,
                    )
        if labels.get(SERVICE_LABEL):
            if (current.drain or current.down) and not current.reason.startswith(REASON_PREFIX):
                raise PermanentStepError(_foreign(current, "not replacing their reason"))
            why = clean_reason(SERVICE_PREFIX + next(iter(notes.values()), "hardware service"))
            if not self.dry_run:
                await self.cmd.run(
                    "scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={why}"
                )
        others = sorted(set(labels) - {REBOOT_LABEL, SERVICE_LABEL})
        if others:
            log.info("slurm: node labels %s have no place in Slurm; not kept on %s", others, node)

    async def post_node_event(
        self,
        *,
        node: str,
        reason: str,
        message: str,
        event_type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        """Slurm keeps no node events: the drain reason and the audit trail say what happened."""
        log.info("slurm node %s: %s: %s", node, reason, message)

    async def flush_events(self, *, timeout_s: float) -> int:
        return 0  # nothing queued: the events went to the log

    # -- agent addresses --

    async def node_internal_ips(self) -> dict[str, str]:
        """Each node's NodeAddr from Slurm (resolved where it is a host name)."""
        out: dict[str, str] = {}
        loop = asyncio.get_running_loop()
        for node in await self._nodes():
            if not _named(node.name):
                continue
            address = node.address or node.hostname or node.name
            try:
                out[node.name] = ipaddress.ip_address(address).compressed
                continue
            except ValueError:
                pass
            try:
                infos = await loop.getaddrinfo(address, None, type=socket.SOCK_STREAM)
            except OSError:
                log.warning("slurm node %s: NodeAddr %r does not resolve", node.name, address)
                continue
            v4 = [i for i in infos if i[0] == socket.AF_INET]
            if infos:
                out[node.name] = str((v4 or infos)[0][4][0])
        return out

    async def pod_ips_by_node(self, *, namespace: str, selector: str) -> dict[str, str]:
        """No agent pods on Slurm: agents run as a systemd unit (address: internal_ip)."""
        return {}


def _named(name: str) -> bool:
    try:
        check_node_name(name)
    except ValueError:
        log.warning("slurm node %r is not a name gpubot accepts; left out", name[:80])
        return False
    return True


def _foreign(node: SlurmNode, what: str) -> str:
    by = node.reason_set_by_user or "slurm"
    return (
        f"{node.name} is drained by {by} (reason: {node.reason or 'none given'}), not by "
        f"gpubot: {what}"
    )

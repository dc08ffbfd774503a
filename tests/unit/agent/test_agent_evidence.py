"""POST /v1/evidence on the agent: stand-in nvidia-bug-report.sh, nvidia-smi and journalctl
that hang, print gigabytes or fail; every part keeps its cap and deadline, and the event loop
keeps running while they do."""

from __future__ import annotations

import asyncio
import base64
import gzip
import time
from pathlib import Path

import httpx
import pytest

from gpubot.agent.api import AgentTokens, create_agent_app
from gpubot.agent.evidence import EvidenceGatherer, EvidenceLimits, PartLimits
from gpubot.agent.operations import GpuOperations
from gpubot.agent.simulated import SimulatedDriver
from gpubot.backends.agent_address import AgentAddresses, AgentLocation
from gpubot.backends.agent_client import HttpNodeAgent
from gpubot.backends.simulated import SimulatedCluster
from gpubot.domain.control.agent_tokens import node_token

MASTER = "s3cret-agent-master"
NODE = "gpu-node-01"
MUTATE = node_token(master=MASTER, node=NODE, scope="mutate")
READ = node_token(master=MASTER, node=NODE, scope="read")
CAP = 64 * 1024

SMI_OK = (
    '#!/bin/sh\n[ "$1 $2" = "-q -x" ] || exit 2\necho "<nvidia_smi_log><gpu/></nvidia_smi_log>"\n'
)
JOURNAL_OK = """#!/bin/sh
echo "2026-11-28T05:00:00+0000 gpu-node-01 kernel: Linux version 6.5.0"
echo "2026-11-28T05:01:00+0000 gpu-node-01 kernel: NVRM: Xid (PCI:0000:18:00): 79, \
pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
echo "2026-11-28T05:01:01+0000 gpu-node-01 kernel: usb 1-1: new device"
printf "2026-11-28T05:01:02+0000 gpu-node-01 kernel: NVRM: GPU 0000:18:00.0: \
GPU has fallen off the bus."
"""
REPORT_OK = """#!/bin/sh
[ "$1" = "--output-file" ] || exit 2
echo "Running nvidia-bug-report.sh..."
echo "bug report body" | gzip -c > "$2.gz"
"""
HANG = "#!/bin/sh\nsleep 600 &\nsleep 600\n"  # a child of its own, holding stdout too
FLOOD = "#!/bin/sh\nexec yes 'NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.'\n"
FLOOD_UNMATCHED = "#!/bin/sh\nexec yes 'usb 1-1: nothing to see here'\n"
REPORT_FLOOD = '#!/bin/sh\nyes "bug report line" > "$2.gz"\n'
FAIL = (
    "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate "
    'with the NVIDIA driver." >&2\nexit 9\n'
)


def tools(tmp_path: Path, **scripts: str) -> dict[str, str]:
    """Stand-ins on a PATH of their own (and /usr/bin:/bin for sh, yes, sleep, gzip)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        script = bin_dir / name
        script.write_text(body)
        script.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def limits(timeout_s: float = 5.0) -> EvidenceLimits:
    return EvidenceLimits(
        bug_report=PartLimits(timeout_s, CAP),
        smi=PartLimits(timeout_s, CAP),
        kernel=PartLimits(timeout_s, CAP),
    )


def gatherer(tmp_path: Path, *, timeout_s: float = 5.0, **scripts: str) -> EvidenceGatherer:
    names = {
        "nvidia_smi": "nvidia-smi",
        "journalctl": "journalctl",
        "report": "nvidia-bug-report.sh",
    }
    return EvidenceGatherer(
        limits=limits(timeout_s),
        env=tools(tmp_path, **{names[k]: v for k, v in scripts.items()}),
    )


def by_name(parts: list) -> dict:  # type: ignore[type-arg]
    return {p.name: p for p in parts}


def test_every_part_ok_and_only_the_kernels_nvidia_lines_kept(tmp_path: Path) -> None:
    parts = by_name(
        gatherer(tmp_path, nvidia_smi=SMI_OK, journalctl=JOURNAL_OK, report=REPORT_OK).gather()
    )
    assert {n: p.status for n, p in parts.items()} == {
        "nvidia-bug-report.log.gz": "ok",
        "nvidia-smi-q.xml": "ok",
        "kernel-nvrm.log": "ok",
    }
    assert gzip.decompress(parts["nvidia-bug-report.log.gz"].content) == b"bug report body\n"
    assert parts["nvidia-smi-q.xml"].content.startswith(b"<nvidia_smi_log>")
    kernel = parts["kernel-nvrm.log"].content.decode().splitlines()
    assert len(kernel) == 2
    assert all("NVRM" in line for line in kernel)


def test_missing_tools_are_said_not_fatal(tmp_path: Path) -> None:
    parts = by_name(gatherer(tmp_path, nvidia_smi=SMI_OK).gather())
    assert parts["nvidia-bug-report.log.gz"].status == "missing"
    assert "not installed" in parts["nvidia-bug-report.log.gz"].detail
    assert parts["nvidia-smi-q.xml"].status == "ok"
    # /usr/bin may hold a real journalctl or dmesg here; either way the part has a status.
    assert parts["kernel-nvrm.log"].status in ("ok", "missing", "failed", "timed_out")


def test_hanging_tools_are_stopped_at_their_deadline(tmp_path: Path) -> None:
    started = time.monotonic()
    parts = by_name(
        gatherer(tmp_path, timeout_s=0.5, nvidia_smi=HANG, journalctl=HANG, report=HANG).gather()
    )
    took = time.monotonic() - started
    assert {p.status for p in parts.values()} == {"timed_out"}
    assert "did not finish within 0.5s" in parts["nvidia-smi-q.xml"].detail
    # Side by side, each stopped at 0.5 s with its children (their pipes closed): well under
    # the 3 x 600 s the stand-ins would sleep.
    assert took < 3.0


def test_gigabytes_are_cut_at_the_cap_exactly(tmp_path: Path) -> None:
    parts = by_name(
        gatherer(tmp_path, nvidia_smi=FLOOD, journalctl=FLOOD, report=REPORT_FLOOD).gather()
    )
    for name in ("nvidia-smi-q.xml", "kernel-nvrm.log", "nvidia-bug-report.log.gz"):
        assert parts[name].status == "truncated", (name, parts[name].detail)
        assert 0 < len(parts[name].content) <= CAP
    assert len(parts["nvidia-smi-q.xml"].content) == CAP


def test_a_flood_of_lines_that_do_not_match_keeps_nothing_and_stops(tmp_path: Path) -> None:
    parts = by_name(gatherer(tmp_path, timeout_s=0.5, journalctl=FLOOD_UNMATCHED).gather())
    kernel = parts["kernel-nvrm.log"]
    assert (kernel.status, kernel.content) == ("timed_out", b"")


def test_a_failing_tool_says_its_last_line(tmp_path: Path) -> None:
    parts = by_name(gatherer(tmp_path, nvidia_smi=FAIL, report=FAIL).gather())
    smi = parts["nvidia-smi-q.xml"]
    assert smi.status == "failed"
    assert "exited 9" in smi.detail
    assert "couldn't communicate" in smi.detail
    assert parts["nvidia-bug-report.log.gz"].status == "failed"


def app(tmp_path: Path, gather: EvidenceGatherer) -> httpx.AsyncClient:
    cluster = SimulatedCluster.default()
    ops = GpuOperations(SimulatedDriver(cluster.agent, node=NODE), evidence=gather)
    agent = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=agent), base_url="http://agent")


async def test_the_event_loop_runs_while_tools_hang(tmp_path: Path) -> None:
    """The route gathers in a thread: a probe is answered and a ticker ticks meanwhile."""
    gather = gatherer(tmp_path, timeout_s=1.0, nvidia_smi=HANG, journalctl=FLOOD, report=HANG)
    async with app(tmp_path, gather) as client:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        gathering = asyncio.create_task(
            client.post("/v1/evidence", headers={"authorization": f"Bearer {MUTATE}"}, json={})
        )
        await asyncio.sleep(0.2)
        probe = await client.get("/healthz")
        answer = await gathering
        tick.cancel()
    assert probe.status_code == 200
    assert answer.status_code == 200
    assert ticks > 30  # ~100 in a second, had nothing blocked the loop
    parts = {p["name"]: p for p in answer.json()["parts"]}
    assert parts["nvidia-smi-q.xml"]["status"] == "timed_out"
    assert parts["kernel-nvrm.log"]["status"] == "truncated"
    assert len(base64.b64decode(parts["kernel-nvrm.log"]["content"])) <= CAP


async def test_evidence_needs_the_mutate_token(tmp_path: Path) -> None:
    async with app(tmp_path, gatherer(tmp_path, nvidia_smi=SMI_OK)) as client:
        read = await client.post(
            "/v1/evidence", headers={"authorization": f"Bearer {READ}"}, json={}
        )
        odd = await client.post(
            "/v1/evidence", headers={"authorization": f"Bearer {MUTATE}"}, json={"argv": ["sh"]}
        )
    assert read.status_code == 403
    assert odd.status_code == 400  # no arguments at all: nothing from the caller runs


async def test_the_bot_client_reads_the_parts(tmp_path: Path) -> None:
    gather = gatherer(tmp_path, nvidia_smi=SMI_OK, journalctl=JOURNAL_OK, report=FAIL)
    cluster = SimulatedCluster.default()
    ops = GpuOperations(SimulatedDriver(cluster.agent, node=NODE), evidence=gather)
    agent = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    client = HttpNodeAgent(
        addresses=AgentAddresses(SimulatedCluster.default().kube, AgentLocation(cluster="sim")),
        master=MASTER,
        transport=httpx.ASGITransport(app=agent),
    )
    try:
        parts = by_name(await client.gather_evidence(node=NODE))
    finally:
        await client.aclose()
    assert parts["nvidia-smi-q.xml"].status == "ok"
    assert parts["nvidia-smi-q.xml"].content.startswith(b"<nvidia_smi_log>")
    assert parts["nvidia-bug-report.log.gz"].status == "failed"


@pytest.fixture(autouse=True)
def _no_real_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may reach the host's own nvidia-smi: every gatherer has its own PATH."""
    monkeypatch.setenv("PATH", "/nonexistent")


def test_an_uncompressed_report_is_gzipped(tmp_path: Path) -> None:
    plain = '#!/bin/sh\necho "bug report body" > "$2"\n'
    parts = by_name(gatherer(tmp_path, report=plain).gather())
    report = parts["nvidia-bug-report.log.gz"]
    assert report.status == "ok"
    assert gzip.decompress(report.content) == b"bug report body\n"


async def test_the_simulated_driver_answers_the_simulated_nodes_evidence() -> None:
    """`gpubot agent --driver simulated`: the node's evidence as the simulated cluster shapes
    it (the XID in the kernel lines), and a refusal a scenario sets is a 409."""
    from gpubot.backends.simulated.scenarios import evidence_fails, inject_xid

    cluster = SimulatedCluster.default()
    inject_xid(cluster, node=NODE, gpu=2)
    driver = SimulatedDriver(cluster.agent, node=NODE)
    ops = GpuOperations(driver, evidence=driver)
    agent = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    auth = {"authorization": f"Bearer {MUTATE}"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=agent), base_url="http://agent"
    ) as client:
        answer = await client.post("/v1/evidence", headers=auth, json={})
        evidence_fails(cluster, node=NODE, reason="evidence is already being gathered")
        refused = await client.post("/v1/evidence", headers=auth, json={})
    parts = {p["name"]: p for p in answer.json()["parts"]}
    assert {p["status"] for p in parts.values()} == {"ok"}
    kernel = base64.b64decode(parts["kernel-nvrm.log"]["content"]).decode()
    assert "NVRM: Xid" in kernel
    assert ": 79, " in kernel
    assert refused.status_code == 409
    assert refused.json()["kind"] == "busy"


async def test_the_bot_reads_no_more_of_an_answer_than_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpubot.backends import agent_client
    from gpubot.errors import PermanentStepError

    monkeypatch.setattr(agent_client, "MAX_ANSWER_BYTES", 16 * 1024)
    gather = gatherer(tmp_path, nvidia_smi=FLOOD)  # a 64 KiB part: 85 KiB of base64
    cluster = SimulatedCluster.default()
    ops = GpuOperations(SimulatedDriver(cluster.agent, node=NODE), evidence=gather)
    agent = create_agent_app(ops, tokens=AgentTokens(read=READ, mutate=MUTATE), node=NODE)
    client = HttpNodeAgent(
        addresses=AgentAddresses(SimulatedCluster.default().kube, AgentLocation(cluster="sim")),
        master=MASTER,
        transport=httpx.ASGITransport(app=agent),
    )
    try:
        with pytest.raises(PermanentStepError, match="larger than 16384 bytes"):
            await client.gather_evidence(node=NODE)
    finally:
        await client.aclose()


def test_the_report_runs_under_prlimit_holding_its_files_to_the_cap(tmp_path: Path) -> None:
    """With prlimit on PATH the kernel stops the report's files growing at the cap (plus
    64 KiB), not only the next look at its folder."""
    record = tmp_path / "prlimit-args"
    prlimit = (
        f'#!/bin/sh\necho "$@" > {record}\n'
        'while [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
    )
    gather = gatherer(tmp_path, report=REPORT_OK)
    tools(tmp_path, prlimit=prlimit)
    parts = by_name(gather.gather())
    assert parts["nvidia-bug-report.log.gz"].status == "ok"
    args = record.read_text().split()
    assert args[0] == f"--fsize={CAP + 64 * 1024}"
    assert args[1] == "--"
    assert args[2].endswith("/nvidia-bug-report.sh")
    assert args[3] == "--output-file"


def test_dmesg_answers_where_journalctl_fails(tmp_path: Path) -> None:
    """A container without the host's journal: journalctl fails, dmesg reads the kernel."""
    dmesg = '#!/bin/sh\necho "[Sat Nov 28 05:01:00 2026] NVRM: Xid (PCI:0000:18:00): 79"\n'
    no_journal = '#!/bin/sh\necho "No journal files were found." >&2\nexit 1\n'
    tools(tmp_path, dmesg=dmesg)
    kernel = by_name(gatherer(tmp_path, journalctl=no_journal).gather())["kernel-nvrm.log"]
    assert kernel.status == "ok"
    assert b"NVRM: Xid" in kernel.content
    assert "dmesg" in kernel.detail

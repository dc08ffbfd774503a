"""Real Slurm on loopback: munged, slurmctld and several slurmd (`slurmd -N NAME`), as root.

The daemons are Debian's (`munge`, `slurmctld`, `slurmd`, `slurm-client`), each node a real
slurmd process with its own name, port and spool, all on 127.0.0.1 with `NodeHostname=
localhost`, GPUs declared as GRES with `Count=` (AutoDetect=off: no device is touched). Every
file lives in one temporary folder; the daemons are stopped by PID. Where a part is missing
the tests are skipped naming the packages, and with CI=true they fail instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NoReturn

import pytest
from waiting import LIMIT_S, wait_until

PACKAGES = "munge slurmctld slurmd slurm-client"
BINARIES = ("munged", "slurmctld", "slurmd", "scontrol", "sbatch", "squeue", "sinfo")
GPUS_PER_NODE = 4


def missing(reason: str) -> NoReturn:
    """A real part is not there: skip on a laptop, fail in CI (CI=true)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SlurmCluster:
    """A running cluster: its config file, node names, and the daemons' PIDs."""

    root: Path
    conf: Path
    nodes: tuple[str, ...]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    log: IO[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, check: bool = True) -> str:
        """A Slurm command against this cluster (argument list, no shell)."""
        out = subprocess.run(
            list(args), env=self.env, capture_output=True, text=True, timeout=30, check=False
        )
        if check and out.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: rc={out.returncode} {out.stderr.strip()}")
        return out.stdout

    def sbatch(self, *args: str) -> str:
        """Submit a job; its id."""
        out = self.run("sbatch", "--parsable", f"--chdir={self.root}", *args)
        return out.strip().split(";")[0]

    def node_json(self, node: str) -> dict[str, object]:
        """The node as `sinfo --json` prints it (22.05's scontrol has no --json)."""
        data = json.loads(self.run("sinfo", "--json"))
        for found in data["nodes"]:
            if found["name"] == node:
                assert isinstance(found, dict)
                return found
        raise AssertionError(f"sinfo lists no node {node}")

    def operator_flags(self, node: str) -> list[str]:
        """The node's state flags as an operator (or gpubot) set them: without NOT_RESPONDING,
        which slurmctld adds on its own when a ping to slurmd is late on a busy machine."""
        flags = self.node_json(node)["state_flags"]
        assert isinstance(flags, list)
        return [str(f) for f in flags if f != "NOT_RESPONDING"]

    def node_state(self, node: str) -> str:
        """sinfo's state of the node, without the trailing * of a node slurmctld has not
        pinged since it was resumed (it takes jobs all the same)."""
        for line in self.run("sinfo", "-h", "-N", "-o", "%N %T").splitlines():
            name, _, state = line.partition(" ")
            if name == node:
                return state.strip().rstrip("*")
        return ""

    def job_state(self, job: str) -> str:
        return self.run("squeue", "-h", "-j", job, "-o", "%T", check=False).strip()

    def wait(self, what: str, predicate: object, limit: float = LIMIT_S) -> None:
        assert callable(predicate)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        nodes = self.run("sinfo", "-h", "-N", "-o", "%N %T %E", check=False)
        raise AssertionError(f"timed out waiting for {what}: {' '.join(nodes.split())}")

    def reset(self) -> None:
        """Between tests: no jobs, every node idle and resumed."""
        self.run("scancel", "--full", "--user=root", check=False)
        self.wait("jobs to end", lambda: not self.run("squeue", "-h", check=False).strip())
        for node in self.nodes:
            if self.node_state(node) != "idle":
                self.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        # A resumed node reads idle* (not responding) until slurmctld's next ping: it still
        # takes jobs.
        seen: list[str] = []

        def idle() -> bool:
            states = [self.node_state(n) for n in self.nodes]
            seen.append(",".join(states))
            return all(s == "idle" for s in states)

        try:
            self.wait("nodes idle", idle)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; seen {sorted(set(seen))}") from None

    def stop(self) -> None:
        """Cancel every job first (their slurmstepd would outlive slurmd), then the daemons
        by PID: the slurmd, slurmctld, munged."""
        if len(self.procs) > 1 and self.procs[1].poll() is None:
            with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
                self.run("scancel", "--full", "--user=root", check=False)
                self.wait(
                    "jobs to end", lambda: not self.run("squeue", "-h", check=False).strip(), 30
                )
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self.log is not None:
            self.log.close()


# Memory enforced by the job's cgroup (cgroup v1's memory controller): --mem is the job's
# memory.limit_in_bytes, the kernel's OOM killer ends whatever passes it, and slurmctld records
# the job OUT_OF_MEMORY. Only where asked: the default cluster constrains nothing.
_PLAIN = {
    "ProctrackType": "proctrack/linuxproc",
    "TaskPlugin": "task/none",
    "JobAcctGatherType": "jobacct_gather/none",
    "SelectTypeParameters": "CR_Core",
}
_MEMORY = {
    "ProctrackType": "proctrack/cgroup",
    "TaskPlugin": "task/cgroup",
    "JobAcctGatherType": "jobacct_gather/cgroup",
    "SelectTypeParameters": "CR_Core_Memory",
}


def _config(
    root: Path, nodes: tuple[str, ...], ctld_port: int, ports: list[int], *, memory: bool
) -> str:
    plugins = "\n".join(f"{k}={v}" for k, v in (_MEMORY if memory else _PLAIN).items())
    node_lines = "\n".join(
        f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=2 "
        f"RealMemory=2000 Gres=gpu:h100:{GPUS_PER_NODE} State=UNKNOWN"
        for name, port in zip(nodes, ports, strict=True)
    )
    return f"""\
ClusterName=gpubot-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
{plugins}
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
GresTypes=gpu
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=600
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobRequeue=1
RebootProgram=/bin/true
{node_lines}
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def start(
    root: Path, nodes: tuple[str, ...] = ("gpu001", "gpu002"), *, memory: bool = False
) -> SlurmCluster:
    """munged, slurmctld and one slurmd per node; every node idle before it returns.
    `memory`: jobs run in cgroups whose memory limit is their --mem (task/cgroup on cgroup
    v1), so a job that passes it is OOM-killed and ends OUT_OF_MEMORY."""
    absent = [b for b in BINARIES if shutil.which(b) is None]
    if absent:
        missing(f"real Slurm needs the Debian packages {PACKAGES} (missing: {', '.join(absent)})")
    if os.geteuid() != 0:
        missing("the real Slurm tests run slurmd, which needs root")
    for sub in ("munge", "state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    os.chmod(root / "munge", 0o700)
    conf = root / "slurm.conf"
    ports = [_free_port() for _ in nodes]
    conf.write_text(_config(root, nodes, _free_port(), ports, memory=memory))
    # Stand-ins for /dev/nvidia*: plain files, which no task constrains or opens.
    (root / "dev").mkdir(exist_ok=True)
    for i in range(GPUS_PER_NODE):
        (root / "dev" / f"nvidia{i}").touch()
    devices = f"{root}/dev/nvidia[0-{GPUS_PER_NODE - 1}]"
    (root / "gres.conf").write_text(
        "AutoDetect=off\n"
        + "".join(f"NodeName={n} Name=gpu Type=h100 File={devices}\n" for n in nodes)
    )
    (root / "cgroup.conf").write_text(
        "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\nConstrainRAMSpace=yes\n"
        if memory
        else "CgroupPlugin=autodetect\n"
    )
    cluster = SlurmCluster(root=root, conf=conf, nodes=nodes)
    log = cluster.log = (root / "daemons.out").open("ab")
    try:
        cluster.procs.append(
            subprocess.Popen(
                [
                    "munged",
                    "--foreground",
                    "--force",
                    f"--key-file={key}",
                    f"--socket={root}/munge/munge.socket",
                    f"--pid-file={root}/munge/munged.pid",
                    f"--log-file={root}/munge/munged.log",
                    f"--seed-file={root}/munge/munged.seed",
                ],
                stdout=log,
                stderr=log,
            )
        )
        log.flush()
        wait_until(
            (root / "munge" / "munge.socket").exists,
            "munged's socket",
            proc=cluster.procs[-1],
            output=lambda: _daemon_output(root),
        )
        cluster.procs.append(
            subprocess.Popen(
                ["slurmctld", "-D", "-i", "-f", str(conf)], env=cluster.env, stdout=log, stderr=log
            )
        )
        wait_until(
            lambda: _answers(cluster),
            "slurmctld to answer scontrol ping",
            proc=cluster.procs[-1],
            output=lambda: _daemon_output(root),
        )
        for name in nodes:
            (root / "spool" / name).mkdir(exist_ok=True)
            cluster.procs.append(
                subprocess.Popen(
                    ["slurmd", "-D", "-N", name, "-f", str(conf)],
                    env=cluster.env,
                    stdout=log,
                    stderr=log,
                )
            )
        cluster.wait(
            "every slurmd registered", lambda: all(cluster.node_state(n) == "idle" for n in nodes)
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _answers(cluster: SlurmCluster) -> bool:
    with contextlib.suppress(subprocess.TimeoutExpired):
        done = subprocess.run(
            ["scontrol", "ping"], env=cluster.env, capture_output=True, timeout=5, check=False
        )
        return done.returncode == 0 and b"UP" in done.stdout
    return False


def _daemon_output(root: Path) -> str:
    """What the daemons wrote: their shared stdout/stderr and munged's own log."""
    parts = [root / "daemons.out", root / "munge" / "munged.log"]
    return "\n".join(p.read_text(errors="replace") for p in parts if p.exists())

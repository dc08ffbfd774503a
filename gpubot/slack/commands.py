"""`/gpu` command text parsed into typed, validated commands (no shell, no raw strings)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from gpubot.domain.k8s_names import check_namespace, check_node_name
from gpubot.knowledge.outside_numbers import is_gpu_uuid

USAGE = """\
*Usage:* `/gpu <command>`
• `help`: this text
• `status [cluster] [node]`: fleet or node GPU table
• `incidents [open|all]`: recent incidents
• `show <incident>`: one incident, its runs and steps
• `plan <runbook> key=value…`: what a run would do (dry-run, changes nothing)
• `run <runbook> key=value… [--dry-run]`: start a runbook (approvals as configured)
• `audit <incident>`: the incident's audit trail
• `triage <namespace>/<pod>`: why a pod died of memory (runs the oom-triage runbook)
• `triage job <id> [cluster]`: why a Slurm job died of memory (slurm-oom-triage)
• `xid <code>`: what an XID error means and what to do
• `idle [namespace]`: idle GPUs (idle reports)
• `history <node|GPU-uuid>`: a GPU's health ledger (XIDs, resets, reboots, service marks)
• `policy node=<node> [cluster=<cluster>]`: the node's pool, its mode and why"""

_INCIDENT = re.compile(r"^inc-[0-9a-f]{4,32}$")
_RUNBOOK = re.compile(r"^[a-z0-9_-]{1,64}$")
_KEY = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_VALUE = re.compile(r"^[A-Za-z0-9_.:/@=+-]{1,253}$")  # printable, no quotes, no spaces


class UsageError(ValueError):
    """What was typed is not a command; the text says why, for an ephemeral reply."""


@dataclass(frozen=True)
class Help:
    pass


@dataclass(frozen=True)
class Status:
    cluster: str
    node: str | None = None


@dataclass(frozen=True)
class Incidents:
    which: Literal["open", "all"] = "open"


@dataclass(frozen=True)
class Show:
    incident: str


@dataclass(frozen=True)
class Audit:
    incident: str


@dataclass(frozen=True)
class PlanCmd:
    runbook: str
    cluster: str
    args: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunCmd:
    runbook: str
    cluster: str
    args: dict[str, str] = field(default_factory=dict)
    dry_run: bool = False


@dataclass(frozen=True)
class Xid:
    code: int


@dataclass(frozen=True)
class Idle:
    namespace: str | None = None


@dataclass(frozen=True)
class History:
    """`/gpu history`: one GPU by UUID, or every GPU recorded on a node."""

    uuid: str | None = None
    node: str | None = None


@dataclass(frozen=True)
class PolicyCmd:
    """`/gpu policy node=…`: the pool a node is in, its mode, and the label that matched."""

    cluster: str
    node: str


Command = (
    Help | Status | Incidents | Show | Audit | PlanCmd | RunCmd | Xid | Idle | History | PolicyCmd
)


def parse(
    text: str, *, clusters: Collection[str], runbooks: Collection[str], default_cluster: str
) -> Command:
    """The command in `text`; UsageError with one line for anything malformed or unknown."""
    words = text.split()
    if not words or words[0] == "help":
        return Help()
    verb, rest = words[0].lower(), words[1:]
    if verb == "status":
        return _status(rest, clusters=clusters, default_cluster=default_cluster)
    if verb == "incidents":
        which = rest[0] if rest else "open"
        if len(rest) > 1 or which not in ("open", "all"):
            raise UsageError("usage: `/gpu incidents [open|all]`")
        return Incidents("open" if which == "open" else "all")
    if verb in ("show", "audit"):
        if len(rest) != 1 or not _INCIDENT.match(rest[0]):
            raise UsageError(f"usage: `/gpu {verb} <incident>` (an id like inc-0123456789)")
        return Show(rest[0]) if verb == "show" else Audit(rest[0])
    if verb in ("plan", "run"):
        return _runbook_cmd(
            verb, rest, clusters=clusters, runbooks=runbooks, default_cluster=default_cluster
        )
    if verb == "triage":
        if rest and rest[0] == "job":
            return _triage_job(
                rest[1:], clusters=clusters, runbooks=runbooks, default=default_cluster
            )
        return _triage(rest, runbooks=runbooks, default_cluster=default_cluster)
    if verb == "xid":
        if len(rest) != 1 or not rest[0].isdigit() or len(rest[0]) > 4:
            raise UsageError("usage: `/gpu xid <code>` (a number, e.g. 79)")
        return Xid(int(rest[0]))
    if verb == "idle":
        if len(rest) > 1:
            raise UsageError("usage: `/gpu idle [namespace]`")
        return Idle(_checked(check_namespace, rest[0]) if rest else None)
    if verb == "history":
        if len(rest) != 1:
            raise UsageError("usage: `/gpu history <node|GPU-uuid>`")
        if is_gpu_uuid(rest[0]):
            return History(uuid=rest[0])
        return History(node=_checked(check_node_name, rest[0]))
    if verb == "policy":
        return _policy(rest, clusters=clusters, default_cluster=default_cluster)
    raise UsageError(f"unknown command {_shown(verb)}; try `/gpu help`")


def _policy(rest: list[str], *, clusters: Collection[str], default_cluster: str) -> PolicyCmd:
    given: dict[str, str] = {}
    for word in rest:
        key, eq, value = word.partition("=")
        if not eq or key not in ("node", "cluster") or key in given:
            raise UsageError("usage: `/gpu policy node=<node> [cluster=<cluster>]`")
        given[key] = value
    if "node" not in given:
        raise UsageError("usage: `/gpu policy node=<node> [cluster=<cluster>]`")
    cluster = given.get("cluster", default_cluster)
    if cluster not in clusters:
        raise UsageError(f"unknown cluster {_shown(cluster)} (known: {_known(clusters)})")
    return PolicyCmd(cluster, _checked(check_node_name, given["node"]))


TRIAGE_RUNBOOK = "oom-triage"
JOB_TRIAGE_RUNBOOK = "slurm-oom-triage"
_JOB_ID = re.compile(r"[0-9]{1,10}", re.ASCII)


def _triage_job(
    rest: list[str], *, clusters: Collection[str], runbooks: Collection[str], default: str
) -> RunCmd:
    """`/gpu triage job 4711 [hpc]` is `/gpu run slurm-oom-triage job=4711`, read-only."""
    if len(rest) not in (1, 2) or not _JOB_ID.fullmatch(rest[0]):
        raise UsageError("usage: `/gpu triage job <Slurm job id> [cluster]`")
    if JOB_TRIAGE_RUNBOOK not in runbooks:
        raise UsageError(f"the {JOB_TRIAGE_RUNBOOK} runbook is not loaded")
    cluster = rest[1] if len(rest) == 2 else default
    if cluster not in clusters:
        raise UsageError(f"unknown cluster {_shown(cluster)} (known: {_known(clusters)})")
    return RunCmd(JOB_TRIAGE_RUNBOOK, cluster, {"job": rest[0]})


def _triage(rest: list[str], *, runbooks: Collection[str], default_cluster: str) -> RunCmd:
    """`/gpu triage ns/pod` is `/gpu run oom-triage namespace=ns pod=pod`, read-only."""
    if len(rest) != 1 or rest[0].count("/") != 1:
        raise UsageError("usage: `/gpu triage <namespace>/<pod>`")
    if TRIAGE_RUNBOOK not in runbooks:
        raise UsageError(f"the {TRIAGE_RUNBOOK} runbook is not loaded")
    namespace, pod = rest[0].split("/")
    args = {
        "namespace": _checked(check_namespace, namespace),
        "pod": _checked(check_node_name, pod),
    }
    return RunCmd(TRIAGE_RUNBOOK, default_cluster, args)


def _status(rest: list[str], *, clusters: Collection[str], default_cluster: str) -> Status:
    if len(rest) > 2:
        raise UsageError("usage: `/gpu status [cluster] [node]`")
    cluster = default_cluster
    if rest and rest[0] in clusters:
        cluster, rest = rest[0], rest[1:]
    elif len(rest) == 2:
        raise UsageError(f"unknown cluster {_shown(rest[0])} (known: {_known(clusters)})")
    node = _checked(check_node_name, rest[0]) if rest else None
    return Status(cluster, node)


def _runbook_cmd(
    verb: str,
    rest: list[str],
    *,
    clusters: Collection[str],
    runbooks: Collection[str],
    default_cluster: str,
) -> PlanCmd | RunCmd:
    dry_run = verb == "run" and "--dry-run" in rest
    rest = [w for w in rest if w != "--dry-run"] if verb == "run" else rest
    if not rest or "=" in rest[0]:
        raise UsageError(f"usage: `/gpu {verb} <runbook> key=value…`")
    runbook = rest[0]
    if not _RUNBOOK.match(runbook) or runbook not in runbooks:
        raise UsageError(f"unknown runbook {_shown(runbook)} (known: {_known(runbooks)})")
    args: dict[str, str] = {}
    cluster = default_cluster
    for word in rest[1:]:
        key, eq, value = word.partition("=")
        if not eq or not _KEY.match(key) or not _VALUE.match(value):
            raise UsageError(f"expected key=value, got {_shown(word)}")
        if key in args:
            raise UsageError(f"{key} given twice")
        if key == "cluster":
            if value not in clusters:
                raise UsageError(f"unknown cluster {_shown(value)} (known: {_known(clusters)})")
            cluster = value
            continue
        if key == "node":
            value = _checked(check_node_name, value)
        elif key == "namespace":
            value = _checked(check_namespace, value)
        args[key] = value
    if verb == "plan":
        return PlanCmd(runbook, cluster, args)
    return RunCmd(runbook, cluster, args, dry_run)


def _checked(check: object, value: str) -> str:
    try:
        return check(value)  # type: ignore[operator,no-any-return]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _shown(word: str) -> str:
    return repr(word[:40])


def _known(names: Collection[str]) -> str:
    return ", ".join(sorted(names)) or "none"

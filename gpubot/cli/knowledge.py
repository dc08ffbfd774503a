"""`gpubot triage oom` and `gpubot xid explain|parse`: GPU failure knowledge, offline."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from gpubot.errors import InputError


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("triage", help="classify a failed workload from its logs")
    tsub = p.add_subparsers(dest="triage_command", required=True, metavar="SUBCOMMAND")
    t = tsub.add_parser(
        "oom",
        help="CUDA OOM, fragmentation, host OOM kill, /dev/shm, killed (cause unknown), "
        "not an OOM, or cannot tell",
        description="Classify an out-of-memory failure from a container log, dmesg or "
        "`kubectl describe pod` output. The verdict names its class (cuda_oom, "
        "cuda_oom_fragmentation, host_oom_killed, shm_exhausted, killed_unknown, not_oom, "
        "or cannot_tell when memory words appear that no family explains), "
        "the family of evidence that decided it, a confidence (high, medium, low), the lines "
        "it rests on, the message's own hint, and advice fitted to the workload (training, "
        "inference server, data loader). Exit code 137 alone is any SIGKILL: it gives "
        "killed_unknown with how to find the cause, not host_oom_killed.",
    )
    _log_arg(t)
    t.add_argument("--exit-code", type=int, metavar="N", help="the container's exit code")
    t.add_argument(
        "--reason", metavar="R", help="the container's termination reason, e.g. OOMKilled"
    )
    t.add_argument(
        "--liveness-failed",
        action="store_true",
        help="the kubelet killed the container after a failed liveness probe",
    )
    t.add_argument(
        "--kernel-log",
        metavar="FILE",
        help="the node's kernel log around the death (journalctl -k, dmesg): an OOM-killer "
        "line naming the pod's cgroup decides where the log cannot tell (needs --pod-uid)",
    )
    t.add_argument(
        "--pod-uid",
        metavar="UID",
        help="the pod's metadata.uid, as the kernel names its memory cgroup",
    )
    t.add_argument(
        "--workload",
        choices=("training", "inference_server", "data_loader"),
        help="what the job is, when the log does not say (advice differs)",
    )
    t.add_argument(
        "--json",
        action="store_true",
        help="print class, family, confidence, workload, evidence, hints, advice and numbers "
        "as JSON",
    )

    p = sub.add_parser("xid", help="NVIDIA XID errors: meaning and log parsing")
    xsub = p.add_subparsers(dest="xid_command", required=True, metavar="SUBCOMMAND")
    x = xsub.add_parser(
        "explain",
        help="what an XID code means and NVIDIA's immediate action",
        description="Look an XID code up in NVIDIA's XID catalog.",
    )
    x.add_argument("code", type=int, metavar="N", help="the XID code, e.g. 79")
    x.add_argument("--json", action="store_true", help="print the entry as JSON")
    x = xsub.add_parser(
        "parse",
        help="list the XID events in a kernel log, per GPU",
        description="Find `NVRM: Xid` lines in dmesg (plain, -T or --time-format iso), "
        "journalctl -k or syslog output. Each event: its timestamp as the line writes it "
        "(seconds since boot, wall clock, or syslog's month/day/time without a year), the "
        "GPU's PCI bus id in one form (0000:3b:00.0), the code, pid/process, message and "
        "NVIDIA's immediate action; XID 154 also gives the recovery action it announces "
        "and where gpubot routes it. Then per GPU: its codes with counts, first and last "
        "stamp, and its UUID and board serial from `NVRM: GPU at PCI:` lines; and for XID "
        "13 and 31, whether the fault came back on the same GPU within --window (NVIDIA's "
        "catalog: run DCGM diagnostics) or not (check the application).",
    )
    _log_arg(x)
    x.add_argument(
        "--window",
        default="24h",
        metavar="DURATION",
        help="how close XID 13/31 occurrences on one GPU must be to count as a repeat "
        "(default 24h; e.g. 30m, 6h, 2d)",
    )
    x.add_argument(
        "--json",
        action="store_true",
        help="print events, per-GPU summary, bus id to UUID mapping and repeats as JSON",
    )


def _log_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--log", required=True, metavar="FILE", help="the log to read; - reads standard input"
    )


def _read_log(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{name}: {exc.strerror}") from exc


_POD_UID = re.compile(r"[0-9a-f]{8}(?:[-_][0-9a-f]{4}){3}[-_][0-9a-f]{12}", re.ASCII)


def _triage(args: argparse.Namespace) -> int:
    from gpubot.knowledge.oom.sources import Sources, combine
    from gpubot.knowledge.oom.triage import classify

    if (args.kernel_log is None) != (args.pod_uid is None):
        raise InputError("--kernel-log and --pod-uid go together")
    if args.pod_uid is not None and not _POD_UID.fullmatch(args.pod_uid):
        raise InputError("--pod-uid: not a pod UID (8-4-4-4-12 lower-case hex digits)")
    log = _read_log(args.log)

    def judge(text: str) -> Any:
        return classify(
            text,
            exit_code=args.exit_code,
            reason=args.reason,
            liveness_failed=args.liveness_failed,
            workload_hint=args.workload,
        )

    triage = judge(log)
    out = triage.as_json()
    if args.kernel_log is not None:
        sources = Sources(kernel_log=_read_log(args.kernel_log), pod_uid=args.pod_uid)
        combined = combine(triage, sources)
        if combined.cls != triage.cls:  # the kernel log decided: its lines' verdict and advice
            triage = judge("\n".join((*combined.kernel_lines, log)))
        out = triage.as_json() | {
            "class": combined.cls,
            "family": combined.family,
            "confidence": combined.confidence,
            "evidence": list(combined.evidence),
            **combined.as_json(),
        }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"class: {out['class']}")
    print(f"family: {out['family']} ({out['confidence']} confidence)")
    print(f"workload: {triage.workload}")
    if "sources" in out:
        print("sources:")
        print("\n".join(f"  {s['source']}: {s['status']} ({s['says']})" for s in out["sources"]))
    print("evidence:")
    print("\n".join(f"  {line}" for line in out["evidence"]) or "  (none)")
    if triage.advice:
        print("advice:")
        print("\n".join(f"  - {line}" for line in triage.advice))
    return 0


def _xid(args: argparse.Namespace) -> int:
    from gpubot.knowledge.xid.catalog import CATALOG_URL, explain
    from gpubot.knowledge.xid.recovery import RECOVERY_XID, ROUTES

    if args.xid_command == "explain":
        info = explain(args.code)
        if info is None:
            raise InputError(f"XID {args.code} is not in NVIDIA's XID catalog ({CATALOG_URL})")
        if args.json:
            print(json.dumps(info.as_json(), indent=2))
            return 0
        print(f"XID {info.code}  {info.name}")
        print(f"  {info.description}")
        print(f"  NVIDIA immediate action: {info.action or '(none published)'}")
        print(f"  gpubot runbook: {info.runbook or '-'}")
        if info.code == RECOVERY_XID:
            print("  gpubot routes by the recovery action the message states:")
            print("\n".join(f"    {action}: {route}" for action, route in ROUTES.items()))
        print(f"  source: {CATALOG_URL}")
        return 0
    from gpubot.domain.runbooks.durations import parse_duration
    from gpubot.knowledge.xid.per_gpu import read_xid_log

    try:
        window_s = parse_duration(args.window)
    except ValueError as exc:
        raise InputError(f"--window: {exc}") from exc
    report = read_xid_log(_read_log(args.log), window_s=window_s)
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
        return 0
    from gpubot.cli.xid_text import render_report

    print(render_report(report))
    return 0


def run_knowledge(args: argparse.Namespace) -> int:
    return _triage(args) if args.command == "triage" else _xid(args)

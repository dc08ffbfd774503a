"""`gpubot evidence list|get`: the evidence bundles kept before resets, reboots and hand-offs."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubot.errors import InputError

if TYPE_CHECKING:
    from gpubot.backends.store import SqlStore
    from gpubot.config import Settings
    from gpubot.domain.gpus.evidence import StoredEvidence

_INCIDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


def _evidence_id(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 2**63:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a bundle's id, a whole number")
    return int(text)


def _incident(text: str) -> str:
    if not _INCIDENT.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an incident id (inc-…)")
    return text


def add_parsers(sub: Any, config_arg: Any) -> None:
    p = sub.add_parser("evidence", help="evidence bundles gathered from nodes: list, get")
    esub = p.add_subparsers(dest="evidence_command", required=True, metavar="SUBCOMMAND")
    ls = esub.add_parser(
        "list",
        help="the bundles kept, newest first, with each part's status",
        description="List the evidence bundles node.gather_evidence kept (newest first): id, "
        "node, incident, when, size, sha256 and each part's status (ok, missing, timed_out, "
        "truncated, failed). Bundles older than evidence.keep_days are pruned. Reads only; "
        "exits 1 with one line when there is no database (it never creates one).",
    )
    config_arg(ls)
    ls.add_argument("--incident", type=_incident, metavar="ID", help="only this incident's")
    ls.add_argument("--json", action="store_true", help="print the bundles as JSON")
    g = esub.add_parser(
        "get",
        help="write one bundle (tar.gz) to a file, its sha256 checked first",
        description="Write bundle ID (a tar.gz: manifest.json and one file per part) to "
        "--out FILE, or to stdout when it is not a terminal. Its content must still hash to "
        "its sha256 (`gpubot audit verify` also checks it against the audit trail): exits 1 "
        "with one line otherwise, when there is no such bundle, when FILE exists, or when "
        "there is no database.",
    )
    config_arg(g)
    g.add_argument("id", type=_evidence_id, metavar="ID", help="the bundle's id (evidence list)")
    g.add_argument("--out", type=Path, metavar="FILE", help="write here (never overwritten)")


async def run_evidence(settings: Settings, args: argparse.Namespace) -> int:
    from gpubot.backends.store.database import StoreMissingError
    from gpubot.errors import NotFoundError
    from gpubot.wiring import open_existing_store

    if args.evidence_command == "get" and args.out is None and sys.stdout.isatty():
        raise InputError("evidence get: stdout is a terminal; give --out FILE or pipe it")
    try:
        store = open_existing_store(settings)
    except StoreMissingError as exc:
        print(f"gpubot: error: {exc}", file=sys.stderr)
        return 1
    try:
        if args.evidence_command == "list":
            return await _list(store, args)
        try:
            return await _get(store, args)
        except NotFoundError as exc:
            print(f"gpubot: error: {exc}", file=sys.stderr)
            return 1
    finally:
        await store.close()


def _line(e: StoredEvidence) -> str:
    from gpubot.domain.gpus.evidence import human_size, parts_summary

    return (
        f"{e.id:>6}  {e.created_at:%Y-%m-%d %H:%M}Z  {e.node}  {e.incident_id or '-'}  "
        f"{human_size(e.size)}  {e.sha256[:16]}  {parts_summary(e.parts)}"
    )


async def _list(store: SqlStore, args: argparse.Namespace) -> int:
    found = await store.list_evidence(incident_id=args.incident)
    if args.json:
        print(json.dumps([e.as_json() for e in found], indent=2))
    elif not found:
        print("no evidence bundles" + (f" for {args.incident}" if args.incident else ""))
    else:
        print("    id  created            node  incident  size  sha256  parts")
        for e in found:
            print(_line(e))
    return 0


async def _get(store: SqlStore, args: argparse.Namespace) -> int:
    meta, content = await store.evidence_content(args.id)
    actual = hashlib.sha256(content).hexdigest()
    if actual != meta.sha256:
        print(
            f"gpubot: error: evidence {meta.id}: content hashes to {actual[:16]}…, not its "
            f"sha256 {meta.sha256[:16]}… (tampered: run `gpubot audit verify`); not written",
            file=sys.stderr,
        )
        return 1
    if args.out is None:
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
        return 0
    try:
        with args.out.open("xb") as f:
            f.write(content)
    except OSError as exc:
        reason = "it exists" if isinstance(exc, FileExistsError) else exc.strerror
        print(f"gpubot: error: --out {args.out}: {reason}; not written", file=sys.stderr)
        return 1
    print(
        f"evidence {meta.id} from {meta.node} written to {args.out} ({meta.size} bytes, "
        f"sha256 {meta.sha256})",
        file=sys.stderr,
    )
    return 0

"""`gpubot gpus history|clear-mark`: a GPU's health ledger, and a person clearing a service mark."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gpubot.errors import InputError

if TYPE_CHECKING:
    from gpubot.backends.store import SqlStore
    from gpubot.config import Settings


def add_parsers(sub: Any, config_arg: Any) -> None:
    p = sub.add_parser("gpus", help="per-GPU health ledger: history, clear a service mark")
    gsub = p.add_subparsers(dest="gpus_command", required=True, metavar="SUBCOMMAND")
    h = gsub.add_parser(
        "history",
        help="a GPU's events (by UUID), or every GPU's seen on a node, with their incidents",
        description="List the GPU health ledger in order: XIDs seen, resets and their result, "
        "reboots requested, diagnostics, service marks and their clearing, each with its "
        "incident. A node name lists every GPU recorded on it, grouped per GPU. Reads only; "
        "exits 1 with one line when there is no database.",
    )
    config_arg(h)
    h.add_argument("target", metavar="NODE|UUID", help="a node name, or a GPU UUID (GPU-…)")
    h.add_argument("--json", action="store_true", help="print the events as JSON")
    c = gsub.add_parser(
        "clear-mark",
        help="clear a GPU's service (RMA) mark so automatic remediation resumes (recorded)",
        description="A GPU marked for hardware service gets no automatic reset or reboot: an "
        "XID run quarantines its node and hands it to a person. After the repair, clear the "
        "mark: a service_cleared row in the ledger (the reboot and reset counts start over) "
        "and a gpu.service_cleared audit event with --reason. The node's "
        "gpubot.io/hardware-service label is the cluster's; remove it with kubectl.",
    )
    config_arg(c)
    c.add_argument("uuid", metavar="UUID", help="the GPU's UUID (GPU-…)")
    c.add_argument("--reason", required=True, help="why, for the ledger and the audit trail")


def _target(text: str) -> tuple[str | None, str | None]:
    """(uuid, node) from what was typed; InputError with one line otherwise."""
    from gpubot.domain.k8s_names import check_node_name
    from gpubot.knowledge.outside_numbers import is_gpu_uuid

    if is_gpu_uuid(text):
        return text, None
    try:
        return None, check_node_name(text)
    except ValueError as exc:
        raise InputError(f"{text[:80]!r} is neither a GPU UUID (GPU-…) nor a node name") from exc


async def _open(settings: Settings) -> SqlStore:
    import asyncio  # here, not at the top: the parser is built for every command

    from gpubot.wiring import open_existing_store

    # Never a new database (StoreMissingError, one line); the ledger's table is added to a
    # database from before it, as serve would at start.
    store = open_existing_store(settings)
    await asyncio.to_thread(store.prepare)
    return store


async def run_gpus(settings: Settings, args: argparse.Namespace) -> int:
    from gpubot.backends.store.database import StoreMissingError

    if args.gpus_command == "history":
        uuid, node = _target(args.target)
    else:
        uuid, node = _target(args.uuid)
        if uuid is None:
            raise InputError(f"{args.uuid[:80]!r} is not a GPU UUID (GPU-…)")
        if not args.reason.strip():
            raise InputError("--reason: say why the mark is cleared")
    try:
        store = await _open(settings)
    except StoreMissingError as exc:
        print(f"gpubot: error: {exc}", file=sys.stderr)
        return 1
    try:
        if args.gpus_command == "history":
            return await _history(store, args, uuid=uuid, node=node)
        assert uuid is not None
        return await _clear(store, uuid=uuid, reason=args.reason.strip())
    finally:
        await store.close()


async def _history(
    store: SqlStore, args: argparse.Namespace, *, uuid: str | None, node: str | None
) -> int:
    from gpubot.backends.console import render
    from gpubot.domain.gpus.ledger_view import history_json, history_message

    events = await store.gpu_history(uuid=uuid, node=node)
    if args.json:
        print(json.dumps(history_json(args.target, events), indent=2))
    else:
        print("\n".join(render(history_message(args.target, events))))
    return 0


async def _clear(store: SqlStore, *, uuid: str, reason: str) -> int:
    from gpubot.domain.control.audit import AuditDraft
    from gpubot.domain.gpus.ledger import open_service_mark

    mark = open_service_mark(await store.gpu_history(uuid=uuid))
    if mark is None:
        raise InputError(f"{uuid} has no open service mark; nothing to clear")
    try:
        who = f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # a uid with no passwd entry (containers)
        who = "cli:unknown"
    now = datetime.now(UTC)
    event = await store.append(
        AuditDraft(
            ts=now,
            actor=who,
            kind="gpu.service_cleared",
            target=uuid,
            args={"node": mark.node, "mark": mark.id},
            result={"marked_at": mark.at.isoformat(), "mark_detail": mark.detail},
            reason=reason,
        )
    )
    cleared = await store.record_gpu_event(
        uuid=uuid,
        node=mark.node,
        kind="service_cleared",
        at=now,
        pci_bus_id=mark.pci_bus_id,
        gpu_index=mark.gpu_index,
        detail=reason,
        actor=who,
    )
    print(
        f"{uuid} on {mark.node}: service mark of {mark.at.strftime('%Y-%m-%d %H:%M')}Z cleared "
        f"(ledger #{cleared.id}, audit seq {event.seq}); automatic remediation resumes"
    )
    return 0

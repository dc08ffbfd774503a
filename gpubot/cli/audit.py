"""`gpubot audit verify|export|reseal`, and the chain head `serve` writes to its log."""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpubot.backends.store import SqlStore
    from gpubot.config import Settings
    from gpubot.ports import AuditLog

_HEX = re.compile(r"[0-9a-f]{12,64}")
anchor_log = logging.getLogger("gpubot.audit")


def _hash_prefix(text: str) -> str:
    value = text.strip().lower()
    if not _HEX.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give 12 to 64 hex digits of a head's hash (the thread shows 12)"
        )
    return value


def _seq(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a seq, a whole number from 1")
    return value


def add_parsers(sub: Any, config_arg: Any) -> None:
    p = sub.add_parser("audit", help="audit trail tools")
    asub = p.add_subparsers(dest="audit_command", required=True, metavar="SUBCOMMAND")
    v = asub.add_parser(
        "verify",
        help="check the hash chain and its head; non-zero exit, one line per problem",
        description="Check every link of the hash chain, that the chain head (audit_head) is "
        "there and names the last event, and, with GPUBOT_AUDIT_KEY, that the head is sealed "
        "with the key. --expect-head and --min-seq also hold the trail to a head recorded "
        "outside the database: the incident thread's audit summary and the log's 'audit chain "
        "head' lines show one. Every evidence bundle kept must still hash to the sha256 its "
        "evidence.stored event recorded, and one no longer kept must have been pruned on the "
        "record (evidence.pruned). Exits 1 with one 'audit: …' line per problem, or with one "
        "'gpubot: error: …' line when there is no database (it never creates one).",
    )
    config_arg(v)
    v.add_argument(
        "--expect-head",
        type=_hash_prefix,
        metavar="HASH",
        help="an event with this hash (or its first 12+ hex digits) must still be in the chain",
    )
    v.add_argument(
        "--min-seq",
        type=_seq,
        metavar="N",
        help="the chain must reach at least seq N (no events cut from its end)",
    )
    e = asub.add_parser(
        "export",
        help="print audit events as JSON lines",
        description="Print the audit events as JSON lines. Exits 1 with one line when there "
        "is no database (it never creates one).",
    )
    config_arg(e)
    e.add_argument("--incident", metavar="ID", help="only this incident's events")
    r = asub.add_parser(
        "reseal",
        help="restart a missing, moved or unsealed chain head from the last event (recorded)",
        description="After `audit verify` reported the chain head (missing, not naming the "
        "last event, or not sealed with GPUBOT_AUDIT_KEY), the bot refuses to append: point "
        "the head at the last event, seal it with the key, and append an audit.resealed event "
        "that records what the head was and --reason. Deliberate, never automatic: compare "
        "with the heads in the incident threads and the log first (audit verify "
        "--expect-head).",
    )
    config_arg(r)
    r.add_argument("--reason", required=True, help="why, for the audit.resealed event")


def database_line(url: str) -> str:
    """What the audit commands say first: the database they read, its password as ***."""
    from gpubot.logs import redact_url

    return f"audit: database {redact_url(url)}"


async def run_audit(settings: Settings, args: argparse.Namespace) -> int:
    from gpubot.backends.store.database import StoreMissingError
    from gpubot.wiring import build_app, build_clusters, open_existing_store

    clusters = build_clusters(settings)  # a bad config first, as serve would say it
    try:
        # Never create: verifying or exporting an empty new database would say nothing true.
        store = open_existing_store(settings)
    except StoreMissingError as exc:
        print(f"gpubot: error: {exc}", file=sys.stderr)
        return 1
    # Which database, on stderr: stdout stays the report (or export's JSON lines).
    print(database_line(settings.store.url), file=sys.stderr)
    try:
        app = build_app(settings, store=store, clusters=clusters)
    except BaseException:
        await store.close()
        raise
    try:
        if args.audit_command == "verify":
            return await _verify(store, args)
        if args.audit_command == "reseal":
            return await _reseal(store, args)
        for event in await store.events(incident_id=args.incident):
            print(json.dumps(event.as_json(), sort_keys=True))
        return 0
    finally:
        await app.aclose()


async def _verify(store: SqlStore, args: argparse.Namespace) -> int:
    from gpubot.domain.control.audit import Anchor

    anchor = None
    if args.expect_head is not None or args.min_seq is not None:
        anchor = Anchor(hash_prefix=args.expect_head, min_seq=args.min_seq)
    problems, head = await store.check(anchor=anchor)
    # Each kept evidence bundle still hashes to the sha256 its audit event recorded.
    found, bundles = await store.check_evidence()
    problems += found
    if problems or head is None:
        for problem in problems:
            print(f"audit: {problem}", file=sys.stderr)
        return 1
    held = f"; reaches {' and '.join(_anchor_words(args))}" if anchor is not None else ""
    # Clean means seq 1..head with no gaps: the head's seq is the number of events.
    kept = f"; {bundles} evidence bundle(s) match their audit events" if bundles else ""
    print(
        f"audit trail verified: {head.seq} events, chain head seq {head.seq} / "
        f"{head.hash[:16]}{held}{kept}"
    )
    return 0


def _anchor_words(args: argparse.Namespace) -> list[str]:
    words = []
    if args.min_seq is not None:
        words.append(f"seq {args.min_seq}")
    if args.expect_head is not None:
        words.append(f"hash {args.expect_head}")
    return words


async def _reseal(store: SqlStore, args: argparse.Namespace) -> int:
    import asyncio

    from gpubot.domain.control.audit import AuditDraft

    # The seal column on a database from before it; creates nothing else: it exists.
    await asyncio.to_thread(store.prepare)
    problems, head = await store.check()
    if head is not None and not [p for p in problems if p.seq is None]:
        print(f"audit: the chain head is intact ({head}); nothing to reseal")
        return 0
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # a uid with no passwd entry (containers)
        who = "unknown"
    old, event = await store.reseal(
        AuditDraft(
            ts=datetime.now(UTC),
            actor=f"cli:{who}",
            kind="audit.resealed",
            reason=args.reason,
        )
    )
    was = str(old) if old is not None else "missing"
    print(
        f"audit: head resealed after seq {event.seq - 1} (was: {was}); "
        f"event seq {event.seq} audit.resealed records it; chain head seq {event.seq} / "
        f"{event.hash[:16]}"
    )
    return 0


def anchor_logging() -> None:
    """`serve` writes the chain head to stderr (at start, after each run, at shutdown): an
    anchor outside the database. Only this logger; the rest of logging is left alone."""
    if anchor_log.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    anchor_log.addHandler(handler)
    anchor_log.setLevel(logging.INFO)
    anchor_log.propagate = False  # once, here, not again through a root handler


async def log_head(store: AuditLog, when: str) -> None:
    """One line with the chain head; never raises (it runs on the way in and out)."""
    from gpubot.domain.control.audit import AuditKeyError, anchor_line

    try:
        head = await store.head()
    except Exception as exc:  # the CLI's edge: the store may be what is failing
        anchor_log.warning("audit chain head unreadable %s: %s", when, exc)
        return
    level = logging.INFO if head is not None else logging.WARNING
    anchor_log.log(level, "%s (%s)", anchor_line(head), when)
    try:
        await store.check_key()
    except AuditKeyError as exc:
        anchor_log.error("%s; /readyz answers 503 until the keys agree", exc)
    except Exception as exc:  # as above: the store may be what is failing
        anchor_log.warning("audit key unchecked %s: %s", when, exc)

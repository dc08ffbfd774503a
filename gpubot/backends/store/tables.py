"""The store's schema: SQLAlchemy Core tables shared by SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from gpubot.domain.instants import as_utc


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in, timezone-aware UTC out, on every database.

    SQLite keeps no offset (it stores the wall-clock text), so values are converted to UTC
    before writing and get UTC attached when read; PostgreSQL returns the session's zone,
    which is converted back to UTC so audit hashes recompute from identical `isoformat()`s.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


metadata = MetaData()

incidents = Table(
    "incidents",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("key", String(512), nullable=False),
    Column("status", String(16), nullable=False),
    Column("alertname", String(255), nullable=False),
    Column("cluster", String(255), nullable=False),
    Column("node", String(255)),
    Column("severity", String(64), nullable=False),
    Column("summary", Text, nullable=False),
    Column("labels", JSON, nullable=False),
    Column("annotations", JSON, nullable=False),
    Column("generator_url", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("resolved_at", UtcDateTime),
    Index("ix_incidents_created", "created_at"),
    # Backstop for the ingest lock: never two open incidents for the same problem.
    Index(
        "uq_incidents_open_key",
        "key",
        unique=True,
        sqlite_where=text("status = 'open'"),
        postgresql_where=text("status = 'open'"),
    ),
)

alerts = Table(
    "alerts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("fingerprint", String(128), nullable=False),
    Column("starts_at", UtcDateTime, nullable=False),
    Column("incident_id", String(32), ForeignKey("incidents.id"), nullable=False),
    Column("status", String(16), nullable=False),
    Column("labels", JSON, nullable=False),
    Column("annotations", JSON, nullable=False),
    Column("group_key", Text, nullable=False),
    Column("ends_at", UtcDateTime),
    Column("received_at", UtcDateTime, nullable=False),
    Column("last_seen_at", UtcDateTime, nullable=False),
    # Alertmanager reuses a fingerprint when the same alert fires again later.
    UniqueConstraint("fingerprint", "starts_at", name="uq_alerts_fingerprint_start"),
    Index("ix_alerts_incident", "incident_id"),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("runbook", String(255), nullable=False),
    # No foreign key: slash-command runs have no incident and runs are kept after cleanup.
    Column("incident_id", String(32)),
    Column("cluster", String(255), nullable=False),
    Column("target", String(255)),
    Column("requested_by", String(255), nullable=False),
    Column("status", String(32), nullable=False),
    Column("dry_run", Boolean, nullable=False),
    Column("context", JSON, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("note", Text, nullable=False),
    # NULLs are distinct, so this binds alert-triggered runs only: one per incident and runbook.
    UniqueConstraint("incident_id", "runbook", name="uq_runs_incident_runbook"),
    Index("ix_runs_created", "created_at"),
    # An alert's dedupe reads (this runbook on this node: recent, or still active) read that
    # node's runs only, and the leader's reads by status their rows only, however many runs
    # the install keeps.
    Index("ix_runs_target", "target", "runbook", "created_at"),
    Index("ix_runs_status", "status"),
)

steps = Table(
    "steps",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id"), primary_key=True),
    Column("step_id", String(255), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("status", String(32), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("args", JSON, nullable=False),
    Column("output", JSON, nullable=False),
    Column("error", Text, nullable=False),
    Column("started_at", UtcDateTime),
    Column("finished_at", UtcDateTime),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("run_id", String(32), ForeignKey("runs.id"), nullable=False),
    Column("step_id", String(255), nullable=False),
    Column("level", String(16), nullable=False),
    Column("approver_group", String(255), nullable=False),
    Column("requested_by", String(255), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("status", String(16), nullable=False),
    Column("votes", JSON, nullable=False),  # [{user, decision, at}]
    # Kept beside `votes` so the compare-and-set is a plain integer comparison on any database.
    Column("vote_count", Integer, nullable=False),
    Index("ix_approvals_run", "run_id"),
)

audit = Table(
    "audit",
    metadata,
    # Assigned by the store from audit_head, so a gap means a deleted row.
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("ts", UtcDateTime, nullable=False),
    Column("actor", String(255), nullable=False),
    Column("kind", String(255), nullable=False),
    Column("incident_id", String(32)),
    Column("run_id", String(32)),
    Column("step", String(255)),
    Column("action", String(255)),
    Column("target", String(255)),
    Column("args", JSON, nullable=False),
    Column("result", JSON, nullable=False),
    Column("reason", Text, nullable=False),
    Column("dry_run", Boolean, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Index("ix_audit_incident", "incident_id"),
)

# One row (id=1): the last event's seq and hash, so deleting the newest rows is detectable.
# Written once with the tables and then only moved forward by appends: a missing row is
# tampering, never re-created (gpubot.backends.store.database.prepare_audit_head).
audit_head = Table(
    "audit_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
    # HMAC of seq and hash under GPUBOT_AUDIT_KEY ("" without a key), so the head cannot be
    # moved back without the key. Added in place to databases from before it (ADD COLUMN).
    Column("seal", String(64), nullable=False, server_default=""),
    # key_id of the key that sealed the head ("" without a key), never the key: an appender
    # holding another key (or none) refuses before it writes. Added in place like `seal`.
    Column("key_id", String(64), nullable=False, server_default=""),
)

# Where the bot's chat messages are (Slack channel id and ts), by key: "thread:<incident id>",
# "approval:<approval id>"; so a restart keeps posting in the same thread.
chat_refs = Table(
    "chat_refs",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("channel", String(255), nullable=False),
    Column("ts", String(64), nullable=False),
)

# Break-glass votes signed with an operator's SSH key (gpubot.domain.control.signed_votes), as the
# CLI stored them, keyed by a digest of message and signature: the same signed vote is one
# row, the server counts each row once (pending → counting → accepted | refused), and a
# nonce counts for one row only (`signer` set: its signature verified).
signed_votes = Table(
    "signed_votes",
    metadata,
    Column("digest", String(64), primary_key=True),
    Column("nonce", String(32), nullable=False),
    Column("action", String(16), nullable=False),
    Column("target", String(80), nullable=False),
    Column("message", Text, nullable=False),
    Column("signature", Text, nullable=False),
    Column("account", String(255), nullable=False),
    Column("submitted_at", UtcDateTime, nullable=False),
    Column("state", String(16), nullable=False),
    Column("verdict", Text, nullable=False, server_default=""),
    Column("settled_at", UtcDateTime, nullable=True),
    Column("signer", String(80), nullable=False, server_default=""),
    Index("ix_signed_votes_state", "state"),
    Index("ix_signed_votes_nonce", "nonce"),
)

# Signed Slack requests already accepted (a SHA-256 of their signature), kept until their
# 5-minute window is over: a replay, to any replica, is refused.
slack_seen = Table(
    "gpubot_slack_seen",
    metadata,
    Column("digest", String(64), primary_key=True),
    Column("expires_at", UtcDateTime, nullable=False),
    Index("ix_gpubot_slack_seen_expires", "expires_at"),
)

# The per-GPU health ledger (gpubot.domain.gpus.ledger): append-only, one row per event on
# one GPU; `id` is monotonic (AUTOINCREMENT on SQLite, so an id is never reused).
gpu_events = Table(
    "gpu_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UtcDateTime, nullable=False),
    Column("uuid", String(80), nullable=False),
    Column("node", String(255), nullable=False),
    Column("pci_bus_id", String(16), nullable=False),
    Column("gpu_index", Integer),
    Column("kind", String(32), nullable=False),
    Column("xid", Integer),
    Column("incident_id", String(32)),
    Column("run_id", String(32)),
    Column("result", String(16), nullable=False),
    Column("detail", String(255), nullable=False),
    Column("actor", String(255), nullable=False),
    Index("ix_gpu_events_uuid", "uuid", "id"),
    Index("ix_gpu_events_node", "node", "id"),
    sqlite_autoincrement=True,
)

# Evidence bundles gathered from a node before a reset, reboot or hand-off (tar.gz bytes),
# each recorded with its sha256 in an `evidence.stored` audit event in the same transaction;
# rows older than evidence.keep_days are deleted with an `evidence.pruned` event.
evidence = Table(
    "evidence",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("node", String(255), nullable=False),
    Column("cluster", String(255), nullable=False),
    Column("incident_id", String(32)),
    Column("run_id", String(32)),
    Column("step", String(255)),
    Column("created_at", UtcDateTime, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("parts", JSON, nullable=False),  # [{name, status, bytes, sha256, detail, seconds}]
    Column("content", LargeBinary, nullable=False),
    Index("ix_evidence_incident", "incident_id"),
    Index("ix_evidence_created", "created_at"),
    sqlite_autoincrement=True,
)

# Cordon slots reserved by replicas that execute side by side (leader_election.shards): one row
# per (cluster, node, replica), written under one advisory lock per cluster, so that the
# fleet's cordon cap counts the cordons other replicas have in flight or just made.
cordon_reservations = Table(
    "cordon_reservations",
    metadata,
    Column("cluster", String(255), primary_key=True),
    Column("node", String(255), primary_key=True),
    Column("holder", String(255), primary_key=True),
    Column("reserved_at", UtcDateTime, nullable=False),
    Column("returned_at", UtcDateTime),
)

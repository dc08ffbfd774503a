"""Evidence gathered from a node before anything destructive: its parts, and the bundle kept."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

PartStatus = Literal["ok", "missing", "timed_out", "truncated", "failed"]
PART_STATUSES: tuple[PartStatus, ...] = ("ok", "missing", "timed_out", "truncated", "failed")
# A part's name becomes a file name inside the bundle: plain, never a path.
PART_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class EvidencePart:
    """One thing gathered: its bytes (cut at the part's cap), how it went and why."""

    name: str  # a file name in the bundle: nvidia-smi-q.xml, kernel-nvrm.log, ...
    status: PartStatus
    content: bytes = b""
    detail: str = ""  # one line: what ran, what went wrong, where it was cut
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if not PART_NAME.fullmatch(self.name) or self.name == MANIFEST:
            raise ValueError(f"evidence part name {self.name[:40]!r} is not a plain file name")
        if self.status not in PART_STATUSES:
            raise ValueError(f"evidence part status {str(self.status)[:20]!r} is not known")

    def manifest(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "bytes": len(self.content),
            "sha256": hashlib.sha256(self.content).hexdigest(),
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Bundle:
    """The tar.gz the bot keeps: manifest.json first, then one file per part with content."""

    content: bytes
    sha256: str
    parts: tuple[Mapping[str, Any], ...]

    @property
    def size(self) -> int:
        return len(self.content)


def build_bundle(
    parts: Sequence[EvidencePart], *, node: str, gathered_at: datetime, extra: Mapping[str, Any]
) -> Bundle:
    """A reproducible tar.gz (fixed times, owners and modes: the same parts give the same
    bytes) of the parts and a manifest naming each part's status."""
    manifest = {
        "node": node,
        "gathered_at": gathered_at.isoformat(),
        **extra,
        "parts": [p.manifest() for p in parts],
    }
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, MANIFEST, json.dumps(manifest, indent=2, sort_keys=True).encode())
        for part in parts:
            if part.content:
                _add(tar, part.name, part.content)
    content = gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
    return Bundle(
        content=content,
        sha256=hashlib.sha256(content).hexdigest(),
        parts=tuple(p.manifest() for p in parts),
    )


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def parts_summary(parts: Sequence[Mapping[str, Any]]) -> str:
    """`nvidia-bug-report ok, nvidia-smi-q.xml timed_out, …`: each part and its status."""
    return ", ".join(f"{p.get('name', '?')} {p.get('status', '?')}" for p in parts)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


@dataclass(frozen=True)
class StoredEvidence:
    """A bundle as the store keeps it (content read only when asked for)."""

    id: int
    node: str
    cluster: str
    incident_id: str | None
    run_id: str | None
    step: str | None
    created_at: datetime
    size: int
    sha256: str
    parts: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "node": self.node,
            "cluster": self.cluster,
            "incident_id": self.incident_id,
            "run_id": self.run_id,
            "step": self.step,
            "created_at": self.created_at.isoformat(),
            "size": self.size,
            "sha256": self.sha256,
            "parts": [dict(p) for p in self.parts],
        }

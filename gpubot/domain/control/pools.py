"""Node pools: which policy scope a node is in (cluster and Node labels), and its mode."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

# observe: plan, tell the thread and record what each mutating step would do, change nothing;
# quarantine: the automatic (safe, reversible) steps only, nothing that needs an approval is
# offered; remediate: the whole runbook, approvals as written.
PoolMode = Literal["observe", "quarantine", "remediate"]
MODES: tuple[PoolMode, ...] = ("observe", "quarantine", "remediate")
MODE_MEANS: dict[PoolMode, str] = {
    "observe": "plan, tell the thread and record; change nothing",
    "quarantine": "the automatic steps only (cordon, taint, notices); nothing needing an "
    "approval is offered",
    "remediate": "the whole runbook, with its approvals",
}
DEFAULT_POOL = "default"


@dataclass(frozen=True)
class Pool:
    """A named scope: the nodes of `clusters` (empty: any) whose labels hold every pair of
    `match` (empty: every node), and the mode automation runs in there."""

    name: str
    mode: PoolMode = "remediate"
    clusters: frozenset[str] = frozenset()
    match: Mapping[str, str] = field(default_factory=dict)
    # Approval level (required, two-person) → the approver group asked in this pool, in place
    # of the step's own group; a level not named keeps the runbook's choice.
    approvers: Mapping[str, str] = field(default_factory=dict)
    # Outside it, a step that needs an approval waits (held) even when approved.
    window: MaintenanceWindow | None = None
    # A failed evidence gathering stops the run before anything destructive (True), or is
    # said in the thread and the run goes on (False).
    evidence_required: bool = False

    def approver_group(self, *, level: str, step_group: str | None, default: str) -> str:
        return self.approvers.get(level) or step_group or default

    def selects(self, *, cluster: str, labels: Mapping[str, str]) -> bool:
        if self.clusters and cluster not in self.clusters:
            return False
        return all(labels.get(key) == value for key, value in self.match.items())

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "clusters": sorted(self.clusters),
            "match": dict(sorted(self.match.items())),
            "approvers": dict(sorted(self.approvers.items())),
            "window": str(self.window) if self.window else None,
            "evidence_required": self.evidence_required,
        }


@dataclass(frozen=True)
class PoolChoice:
    """The pool a node is in and why, in words for the plan and the thread."""

    pool: Pool
    why: str

    def __str__(self) -> str:
        return f"pool {self.described}"

    @property
    def described(self) -> str:
        """`canary (observe): label gpubot.io/pool=canary matched`."""
        return f"{self.pool.name} ({self.pool.mode}): {self.why}"


def choose_pool(
    pools: Sequence[Pool], default: Pool, *, cluster: str, labels: Mapping[str, str]
) -> PoolChoice:
    """The first pool that selects the node, else `default`; with the reason."""
    for pool in pools:
        if pool.selects(cluster=cluster, labels=labels):
            matched = [f"{k}={v}" for k, v in sorted(pool.match.items())]
            where = [f"cluster {cluster}"] if pool.clusters else []
            said = ", ".join(where + [f"label {m}" for m in matched]) or "it selects every node"
            return PoolChoice(pool, f"{said} matched")
    return PoolChoice(default, "no pool matched: the default policy")


def policy_digest(document: Mapping[str, Any]) -> str:
    """A short, stable digest of a policy as loaded (logged and audited at start), so a
    change between two starts or reloads is visible."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def policy_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two policy documents (the policy block as loaded), one line
    each, by dotted key: a pool by its name (`pools.canary.mode: observe -> quarantine`), a
    pool added or removed as one line, and the order of the pools (first match wins)."""
    old, new = _flatten(before), _flatten(after)
    old_pools, new_pools = _pool_names(before), _pool_names(after)
    said: list[str] = []
    for name in [n for n in new_pools if n not in old_pools]:
        mode = new.get(f"pools.{name}.mode", "remediate")
        said.append(f"pools.{name}: added ({mode})")
    for name in [n for n in old_pools if n not in new_pools]:
        said.append(f"pools.{name}: removed")
    gone = {f"pools.{n}." for n in set(old_pools) ^ set(new_pools)}
    for key in sorted(old.keys() | new.keys()):
        if any(key.startswith(prefix) for prefix in gone):
            continue
        if key not in old:
            said.append(f"{key}: set to {_short(new[key])}")
        elif key not in new:
            said.append(f"{key}: unset (was {_short(old[key])})")
        elif old[key] != new[key]:
            said.append(f"{key}: {_short(old[key])} -> {_short(new[key])}")
    kept_old = [n for n in old_pools if n in new_pools]
    kept_new = [n for n in new_pools if n in old_pools]
    if kept_old != kept_new:
        said.append(f"pools order: {', '.join(old_pools)} -> {', '.join(new_pools)}")
    return said


def _pool_names(document: Mapping[str, Any]) -> list[str]:
    pools = document.get("pools") or []
    return [str(p.get("name")) for p in pools if isinstance(p, Mapping)]


def _flatten(document: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif (
            isinstance(value, list)
            and value
            and all(isinstance(x, Mapping) and "name" in x for x in value)
        ):
            for x in value:
                walk(f"{prefix}.{x['name']}", {k: v for k, v in x.items() if k != "name"})
        elif value is not None:  # null: the key is unset (its default applies)
            out[prefix] = value

    walk("", document)
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def offered(mode: PoolMode, *, mutating: bool, approval: str) -> str | None:
    """Why a step does not act in this mode (None: it runs as the runbook says).

    observe: nothing mutating acts (the step is recorded as what it would do);
    quarantine: a step that needs an approval is not offered (the automatic, reversible
    steps still run)."""
    if mode == "observe" and mutating:
        return "observe mode: recorded what it would do, changed nothing"
    if mode == "quarantine" and approval != "auto":
        return "quarantine mode: only the automatic steps run; this one needs an approval"
    return None


_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class MaintenanceWindow:
    """When a pool's destructive steps may run: on `days` (empty: every day), from `start`
    to `end` (minutes after midnight UTC; an end before the start runs past midnight)."""

    start: int
    end: int
    days: frozenset[str] = frozenset()

    def contains(self, now: datetime) -> bool:
        now = now.astimezone(UTC)
        minute = now.hour * 60 + now.minute
        day = _DAYS[now.weekday()]
        if self.start <= self.end:
            return self._on(day) and self.start <= minute < self.end
        if minute >= self.start:  # the evening part belongs to today
            return self._on(day)
        yesterday = _DAYS[(now.weekday() - 1) % 7]  # the morning part, to the day before
        return minute < self.end and self._on(yesterday)

    def _on(self, day: str) -> bool:
        return not self.days or day in self.days

    def __str__(self) -> str:
        days = ",".join(d for d in _DAYS if d in self.days) if self.days else "daily"
        return f"{days} {_hhmm(self.start)}-{_hhmm(self.end)} UTC"


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def parse_window(text: str) -> MaintenanceWindow:
    """`[days ]HH:MM-HH:MM` in UTC, days a comma list of mon…sun (`sat,sun 02:00-06:00`,
    `22:00-04:00`); ValueError with one line otherwise."""
    parts = text.strip().lower().split()
    if len(parts) not in (1, 2):
        raise ValueError(f"window {text!r}: expected '[days ]HH:MM-HH:MM' (UTC)")
    days = frozenset(parts[0].split(",")) if len(parts) == 2 else frozenset()
    if unknown := sorted(days - set(_DAYS)):
        raise ValueError(f"window {text!r}: unknown day {unknown[0]!r} (mon … sun)")
    span = parts[-1].split("-")
    if len(span) != 2:
        raise ValueError(f"window {text!r}: expected HH:MM-HH:MM")
    start, end = (_minutes(t, text) for t in span)
    if start == end:
        raise ValueError(f"window {text!r}: starts and ends at the same time")
    return MaintenanceWindow(start, end, days)


def _minutes(hhmm: str, text: str) -> int:
    hours, _, minutes = hhmm.partition(":")
    if not (hours.isascii() and hours.isdigit() and minutes.isascii() and minutes.isdigit()):
        raise ValueError(f"window {text!r}: {hhmm!r} is not HH:MM")
    h, m = int(hours), int(minutes)
    if h > 23 or m > 59 or len(minutes) != 2:
        raise ValueError(f"window {text!r}: {hhmm!r} is not a time of day")
    return h * 60 + m

"""Settings for policy: approver groups, pools, caps, diagnostics, escalation, operator keys."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from gpubot.config.base import _LABEL_KEY, _LABEL_VALUE, _Section
from gpubot.domain.control.pools import PoolMode, parse_window
from gpubot.domain.control.signed_votes import fingerprint, key_blob
from gpubot.domain.runbooks.durations import parse_duration
from gpubot.knowledge.dcgm_diag import DiagUnavailable


class GroupSettings(_Section):
    users: list[str] = Field(default_factory=list, description="Slack user ids (U…/W…)")
    usergroups: list[str] = Field(default_factory=list, description="Slack user-group ids (S…)")


class BlastRadiusSettings(_Section):
    max_cordoned_fraction: float = Field(0.25, ge=0, le=1)
    max_cordoned_count: int = Field(4, ge=0)
    max_concurrent_drains: int = Field(1, ge=0)


class AttemptSettings(_Section):
    max_attempts: int = Field(3, ge=1)
    window: timedelta = timedelta(hours=24)

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, value: Any) -> Any:
        return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value


class OperatorKeySettings(_Section):
    """One operator's SSH public key and who it stands for in a signed break-glass vote."""

    key: str = Field(
        description="the OpenSSH public key line (`ssh-ed25519 AAAA… comment`, as in the "
        "operator's id_ed25519.pub); ed25519, ecdsa or rsa (2048 bits or more)"
    )
    user: str = Field(
        pattern=r"^[UW][A-Z0-9]{1,20}$",
        description="the approver identity: a Slack user id in policy.groups",
    )
    usergroups: list[str] = Field(
        default_factory=list,
        description="Slack user-group ids this person is in (Slack is not asked for votes "
        "that come from the CLI)",
    )

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        key_blob(value)  # ValueError with one line: the adapter reads it fully at start
        return value

    def fingerprint(self) -> str:
        return fingerprint(key_blob(self.key)[1])


class EscalationSettings(_Section):
    """When a GPU's history changes what an XID run does (gpubot.domain.gpus.escalation)."""

    xid_repeat_window: timedelta = Field(
        timedelta(days=7),
        description="an XID in repeat_xids seen again on the same GPU within this: run "
        "diagnostics (NVIDIA's catalog); the first one: check the application",
    )
    repeat_xids: list[int] = Field(
        default_factory=lambda: [13, 31], description="XIDs whose repeat calls for diagnostics"
    )
    max_resets: int = Field(
        1, ge=0, description="resets of one GPU within reset_window before a reboot is asked"
    )
    reset_window: timedelta = Field(timedelta(days=7), description="resets are counted over this")
    max_reboots: int = Field(
        2,
        ge=1,
        description="reboots for the same XID within reboot_window before the GPU is marked "
        "for hardware service (gpud's practice: inspection after two)",
    )
    reboot_window: timedelta = Field(timedelta(days=30), description="reboots counted over this")

    @field_validator("xid_repeat_window", "reset_window", "reboot_window", mode="before")
    @classmethod
    def _windows(cls, value: Any) -> Any:
        return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value


class PoolSettings(_Section):
    """A node pool: its nodes (clusters and Node labels) and the mode automation runs in."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    mode: PoolMode = Field(
        "remediate",
        description="observe (plan, tell, record; change nothing), quarantine (the automatic "
        "steps only; nothing needing an approval is offered) or remediate (the whole runbook)",
    )
    clusters: list[str] = Field(default_factory=list, description="empty: every cluster")
    window: str | None = Field(
        None,
        description="maintenance window, UTC: '[days ]HH:MM-HH:MM' (`sat,sun 02:00-06:00`, "
        "`22:00-04:00`); outside it, steps that need an approval wait, even once approved",
    )
    approvers: dict[Literal["required", "two-person"], str] = Field(
        default_factory=dict,
        description="approval level → the approver group asked for this pool's nodes "
        "(a group of policy.groups); a level not named keeps the runbook's group",
    )
    match: dict[str, str] = Field(
        default_factory=dict,
        description="Node labels the node must carry with exactly these values (all of them); "
        "empty: every node of the clusters",
    )
    evidence_required: bool | None = Field(
        None,
        description="a failed evidence gathering stops the run before anything destructive "
        "(true) or is said in the thread while the run goes on (false); unset: "
        "policy.evidence_required",
    )
    blast_radius: BlastRadiusSettings | None = Field(
        None,
        description="this pool's own caps (the keys of policy.blast_radius; a key not given: "
        "the global value), counted over its own GPU nodes on top of the fleet's cap; unset: "
        "only the fleet's cap applies",
    )
    diag_level: int | None = Field(
        None, ge=0, le=3, description="DCGM diagnostics level for its nodes; unset: the global"
    )
    escalation: EscalationSettings | None = Field(
        None,
        description="escalation thresholds for its nodes (the keys of policy.escalation; a "
        "key not given: the global value); unset: policy.escalation",
    )

    @field_validator("window")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is not None:
            parse_window(value)
        return value

    @field_validator("match")
    @classmethod
    def _label_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key, wanted in value.items():
            if not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(wanted):
                raise ValueError(f"{key!r}: {wanted!r} is not a Kubernetes label key and value")
        return value


def _default_groups() -> dict[str, GroupSettings]:
    # The shipped runbooks name `oncall`; empty until configured, so nobody can approve yet.
    return {"oncall": GroupSettings()}


class PolicySettings(_Section):
    default_group: str = "oncall"
    groups: dict[str, GroupSettings] = Field(default_factory=_default_groups)
    approval_expiry: timedelta = timedelta(minutes=30)
    blast_radius: BlastRadiusSettings = Field(default_factory=BlastRadiusSettings)
    attempts: AttemptSettings = Field(default_factory=AttemptSettings)
    diag_level: int = Field(
        1,
        ge=0,
        le=3,
        description="DCGM diagnostics level gpu.diag runs before a node is released (the "
        "xid79 runbook's verify): 1 quick (seconds), 2 medium (minutes), 3 long (~15 min); "
        "0 turns diagnostics off, and a node is then released on NVML's word alone",
    )
    mode: PoolMode = Field(
        "remediate",
        description="the mode of nodes no pool selects (the default pool): observe, "
        "quarantine or remediate",
    )
    evidence_required: bool = Field(
        False,
        description="when node.gather_evidence fails: false says so in the thread and the run "
        "goes on (it can still end succeeded); true stops the run there, before the reset, "
        "reboot or hand-off it was keeping evidence for. A pool may set its own",
    )
    pools: list[PoolSettings] = Field(
        default_factory=list,
        description="node pools, first match wins; a node in none follows `mode` and the "
        "rest of this block",
    )
    diag_unavailable: DiagUnavailable = Field(
        "approve",
        description="when DCGM cannot run on a node (no dcgmi in the agent, no host engine): "
        "approve releases it only through an approval that names the missing check; stop "
        "leaves it cordoned for a human. Either way the plan says so before anything runs",
    )
    escalation: EscalationSettings = Field(default_factory=EscalationSettings)
    operator_keys: list[OperatorKeySettings] = Field(
        default_factory=list,
        description="break-glass CLI: each operator's SSH public key → the approver it stands "
        "for; votes are signed with it and checked by the server. Read from the config file "
        "only, never from GPUBOT_* variables",
    )

    @model_validator(mode="after")
    def _pool_groups(self) -> PolicySettings:
        for pool in self.pools:
            for level, group in pool.approvers.items():
                if group not in self.groups:
                    raise ValueError(
                        f"pools.{pool.name}.approvers.{level}: {group!r} is not a group of "
                        f"policy.groups ({', '.join(sorted(self.groups)) or 'none'})"
                    )
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("pools: a pool name is used twice")
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_operators(cls, data: Any) -> Any:
        if isinstance(data, dict) and "operators" in data:
            raise ValueError(
                "operators (local account → approver) is no longer read: break-glass "
                "decisions are signed with the operator's SSH key; list the keys under "
                "policy.operator_keys ({key: ssh-ed25519 AAAA…, user: U…}; README: Break-glass)"
            )
        return data

    @field_validator("operator_keys")
    @classmethod
    def _one_identity_per_key(cls, value: list[OperatorKeySettings]) -> list[OperatorKeySettings]:
        seen: dict[str, str] = {}
        for entry in value:
            key = entry.fingerprint()
            if key in seen:
                raise ValueError(f"key {key} is listed twice (for {seen[key]} and {entry.user})")
            seen[key] = entry.user
        return value

    @field_validator("approval_expiry", mode="before")
    @classmethod
    def _expiry(cls, value: Any) -> Any:
        return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value

"""The config's rules as domain objects: approval policy, escalation, reclaim, the runbooks.

Kept apart from wiring (which builds the store, clusters and Slack) so that commands such
as `gpubot runbooks validate` check runbooks without importing any adapter.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from gpubot.config import Settings
from gpubot.config.policy import EscalationSettings
from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.control.pools import DEFAULT_POOL, Pool, parse_window, policy_digest
from gpubot.domain.control.safety_caps import AttemptCap, BlastRadius, Policy
from gpubot.domain.fleet.reclaim import ReclaimPolicy
from gpubot.domain.gpus.escalation import EscalationPolicy
from gpubot.domain.runbooks.loader import LoadedRunbook, load_dirs
from gpubot.engine.registry import Registry
from gpubot.engine.runbook_policy_checks import validate
from gpubot.errors import RunbookError


def shipped_runbooks_dir() -> Path:
    """The runbooks installed with the package (the repo's runbooks/ directory)."""
    return Path(str(resources.files("gpubot.shipped_runbooks")))


def build_policy(settings: Settings) -> Policy:
    p = settings.policy
    groups = {
        name: ApproverGroup(name=name, users=frozenset(g.users), usergroups=frozenset(g.usergroups))
        for name, g in p.groups.items()
    }
    return Policy(
        groups=groups,
        default_group=p.default_group,
        approval_expiry=p.approval_expiry,
        blast=BlastRadius(**p.blast_radius.model_dump()),
        attempts=AttemptCap(max_attempts=p.attempts.max_attempts, window=p.attempts.window),
        escalation=build_escalation(settings),
        pools=tuple(
            Pool(
                name=pool.name,
                mode=pool.mode,
                clusters=frozenset(pool.clusters),
                match=dict(pool.match),
                approvers={str(level): group for level, group in pool.approvers.items()},
                window=parse_window(pool.window) if pool.window else None,
                evidence_required=p.evidence_required
                if pool.evidence_required is None
                else pool.evidence_required,
            )
            for pool in p.pools
        ),
        default_pool=Pool(DEFAULT_POOL, mode=p.mode, evidence_required=p.evidence_required),
        digest=policy_digest(p.model_dump(mode="json")),
        document=p.model_dump(mode="json"),
        pool_blast={
            pool.name: BlastRadius(
                **{
                    **p.blast_radius.model_dump(),
                    **pool.blast_radius.model_dump(exclude_unset=True),
                }
            )
            for pool in p.pools
            if pool.blast_radius is not None
        },
        pool_escalation={
            pool.name: escalation_of(
                p.escalation.model_copy(update=pool.escalation.model_dump(exclude_unset=True))
            )
            for pool in p.pools
            if pool.escalation is not None
        },
        pool_diag_level={
            pool.name: pool.diag_level for pool in p.pools if pool.diag_level is not None
        },
    )


def build_escalation(settings: Settings) -> EscalationPolicy:
    """policy.escalation: what a GPU's history changes in an XID run."""
    return escalation_of(settings.policy.escalation)


def escalation_of(e: EscalationSettings) -> EscalationPolicy:
    """One escalation block (global, or a pool's over it) as the domain reads it."""
    return EscalationPolicy(
        xid_repeat_window=e.xid_repeat_window,
        repeat_xids=frozenset(e.repeat_xids),
        max_resets=e.max_resets,
        reset_window=e.reset_window,
        max_reboots=e.max_reboots,
        reboot_window=e.reboot_window,
    )


def build_reclaim(settings: Settings) -> ReclaimPolicy:
    """The idle-GPU reclamation rules; prices come from the idle report's, so both agree."""
    r, prices = settings.reclaim, settings.reports.idle
    return ReclaimPolicy(
        opt_out_key=r.opt_out_key,
        system_namespaces=frozenset(r.system_namespaces),
        min_age=r.min_age,
        grace=r.grace,
        owners=dict(r.owners),
        fallback=r.fallback,
        prices=dict(prices.prices),
        default_price=prices.default_price,
        poll_seconds=max(1.0, r.poll.total_seconds()),
    )


def runbook_dirs(settings: Settings) -> list[Path]:
    """Where `serve` loads runbooks from: the shipped ones (unless turned off), runbooks.dirs."""
    shipped = [shipped_runbooks_dir()] if settings.runbooks.builtin else []
    return shipped + list(settings.runbooks.dirs)


def load_runbooks(
    settings: Settings, *, registry: Registry, policy: Policy | None = None
) -> list[LoadedRunbook]:
    loaded = load_dirs(runbook_dirs(settings))
    problems = [p for item in loaded for p in validate(item, registry=registry, policy=policy)]
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise RunbookError(problems[0] + more)
    return loaded

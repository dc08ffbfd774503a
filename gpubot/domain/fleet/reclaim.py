"""Idle-GPU reclamation rules: what is never touched, who owns a pod, who may object."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gpubot.domain.control.approvals import ApproverGroup
from gpubot.domain.fleet.cluster import PodInfo

OPT_OUT_KEY = "gpubot.io/reclaim"  # label or annotation; "false" keeps the pod out
OWNER_ANNOTATION = "gpubot.io/owner"  # "<@U…>" or "<!subteam^S…>": who to tell
OBJECTION_KIND = "reclaim.objection"  # the audit event an owner's "keep it" click writes
SYSTEM_NAMESPACES = frozenset(
    {
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gpu-operator",
        "nvidia-gpu-operator",
        "monitoring",
        "gpubot",
    }
)
_OPT_OUT_VALUES = ("false", "no", "off", "never")
_USER = re.compile(r"^(?:<@)?([UW][A-Z0-9]{2,20})(?:\|[^<>]*)?>?$")
_GROUP = re.compile(r"^(?:<!subteam\^)?(S[A-Z0-9]{2,20})(?:\|[^<>]*)?>?$")


@dataclass(frozen=True)
class ReclaimPolicy:
    """The operator's rules for taking idle GPUs back (config `reclaim:`)."""

    opt_out_key: str = OPT_OUT_KEY
    system_namespaces: frozenset[str] = SYSTEM_NAMESPACES
    min_age: timedelta = timedelta(hours=2)
    grace: timedelta = timedelta(hours=4)
    owners: Mapping[str, str] = field(default_factory=dict)  # namespace → Slack mention
    fallback: str = ""  # who is told when a namespace has no owner (a mention, or text)
    prices: Mapping[str, float] = field(default_factory=dict)  # $/GPU-hour by model substring
    default_price: float = 0.0
    poll_seconds: float = 30.0  # how often the grace period looks for an objection

    def price(self, model: str) -> float | None:
        """$ per GPU-hour for a model (the longest key the name contains); None if unknown."""
        hits = [k for k in self.prices if k and k.lower() in model.lower()]
        if hits:
            return self.prices[max(hits, key=len)]
        return self.default_price or None


def opt_out(key: str, pod: PodInfo) -> str | None:
    """Where the pod opts out (`label k=false` / `annotation k=false`), or None."""
    for where, values in (("label", pod.labels), ("annotation", pod.annotations)):
        value = values.get(key)
        if value is not None and value.strip().lower() in _OPT_OUT_VALUES:
            return f"{where} {key}={value}"
    return None


def refusal(policy: ReclaimPolicy, pod: PodInfo, *, now: datetime) -> str | None:
    """Why gpubot must leave this pod alone, in one line; None when it may be reclaimed."""
    if (where := opt_out(policy.opt_out_key, pod)) is not None:
        return f"{pod.ref} has opted out of reclamation ({where})"
    if pod.namespace in policy.system_namespaces:
        return f"{pod.ref} is in the system namespace {pod.namespace}"
    if pod.created_at is None:
        return f"{pod.ref} has no creation time, so its age is unknown"
    age = now - pod.created_at
    if age < policy.min_age:
        return (
            f"{pod.ref} is {_hours(age)} old, younger than the minimum age {_hours(policy.min_age)}"
        )
    return None


def _hours(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{delta.total_seconds() / 60:.0f} min"


@dataclass(frozen=True)
class Owner:
    """Who is told about a reclamation and may object to it."""

    mention: str  # Slack markup for the message; "" when nobody is known
    user: str | None = None
    usergroup: str | None = None
    source: str = "nobody"  # annotation | namespace | fallback | nobody


def parse_owner(text: str, *, source: str) -> Owner | None:
    """`<@U…>`, `<!subteam^S…>` or a bare U…/S… id; None for anything else.

    Only these shapes become mentions: an annotation saying `<!channel>` must not page a
    whole channel, so the mention is rebuilt from the id, never copied.
    """
    text = text.strip()
    if user := _USER.match(text):
        return Owner(f"<@{user.group(1)}>", user=user.group(1), source=source)
    if group := _GROUP.match(text):
        return Owner(f"<!subteam^{group.group(1)}>", usergroup=group.group(1), source=source)
    return None


def owner_of(policy: ReclaimPolicy, pod: PodInfo) -> Owner:
    """The pod's annotation wins over the namespace mapping; else the fallback text."""
    if (
        owner := parse_owner(pod.annotations.get(OWNER_ANNOTATION, ""), source="annotation")
    ) is not None:
        return owner
    if (owner := parse_owner(policy.owners.get(pod.namespace, ""), source="namespace")) is not None:
        return owner
    if policy.fallback:
        return parse_owner(policy.fallback, source="fallback") or Owner(
            _plain(policy.fallback), source="fallback"
        )
    return Owner("", source="nobody")


def _plain(text: str) -> str:
    # Fallback text goes into a message as words, never as Slack markup.
    return text.replace("<", "").replace(">", "")[:80]


def may_object(
    *,
    user: str,
    owner_user: str | None,
    owner_group: str | None,
    approvers: ApproverGroup | None,
    user_groups: Collection[str] = (),
) -> bool:
    """The owner (the user, or a member of the owning user group) or an approver may object."""
    if owner_user is not None and user == owner_user:
        return True
    if owner_group is not None and owner_group in user_groups:
        return True
    return approvers is not None and approvers.admits(user, user_groups)

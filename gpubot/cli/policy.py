"""`gpubot policy show --node NODE`: the policy in force for one node (its pool, its mode, why)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpubot.errors import InputError

if TYPE_CHECKING:
    from gpubot.config import Settings


def add_parser(sub: Any, config_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "policy",
        help="show the policy in force for a node (its pool and mode, and why)",
        description="The policy a node is under now: the first pool of policy.pools whose "
        "cluster and Node labels select it (else the default), its mode, approvers, blast "
        "radius, diagnostics, and the digest of the policy as loaded. Reads the node's labels "
        "from its cluster.",
    )
    verbs = p.add_subparsers(dest="policy_command", required=True, metavar="VERB")
    show = verbs.add_parser("show", help="the effective policy of one node")
    config_arg(show)
    show.add_argument("--node", required=True, help="the node's name, as its cluster reports it")
    show.add_argument("--cluster", help="its cluster (default: the default or only cluster)")
    show.add_argument("--json", action="store_true", help="one JSON object instead of lines")


async def run_policy(settings: Settings, args: argparse.Namespace) -> int:
    from gpubot.domain.control.pools import MODE_MEANS
    from gpubot.domain.k8s_names import check_node_name
    from gpubot.loaded_rules import build_policy
    from gpubot.wiring import build_clusters

    try:
        node = check_node_name(args.node)
    except ValueError as exc:
        raise InputError(f"--node: {exc}") from exc
    cluster = args.cluster or settings.fallback_cluster
    if cluster is None or settings.cluster(cluster) is None:
        known = ", ".join(c.name for c in settings.clusters)
        raise InputError(f"--cluster: which cluster? (configured: {known})")
    policy = build_policy(settings)
    ports = build_clusters(settings)[cluster]
    info = await ports.nodes.get_node(node=node)
    choice = policy.pool_for(cluster=cluster, labels=info.labels)
    p = settings.policy
    shown: dict[str, Any] = {
        "node": node,
        "cluster": cluster,
        "pool": {**choice.pool.as_json(), "why": choice.why},
        "approvers": {"default_group": p.default_group, "groups": sorted(p.groups)},
        "approval_expiry": str(p.approval_expiry),
        "blast_radius": p.blast_radius.model_dump(),
        "attempts": {"max": p.attempts.max_attempts, "window": str(p.attempts.window)},
        "diagnostics": {"level": p.diag_level, "when_unavailable": p.diag_unavailable},
        "digest": policy.digest,
    }
    if args.json:
        print(json.dumps(shown, indent=2))
        return 0
    b = p.blast_radius
    print(f"node {node} (cluster {cluster})")
    print(f"pool: {choice.described}")
    print(f"mode: {choice.pool.mode}: {MODE_MEANS[choice.pool.mode]}")
    print(f"approvers: group {p.default_group} by default; groups {', '.join(sorted(p.groups))}")
    print(
        f"blast radius: at most {b.max_cordoned_count} nodes or {b.max_cordoned_fraction:.0%} "
        f"of the GPU fleet cordoned, {b.max_concurrent_drains} drain(s) at a time"
    )
    window = shown["attempts"]["window"]
    print(f"attempts: {p.attempts.max_attempts} per runbook and node within {window}")
    print(f"diagnostics: level {p.diag_level}; when DCGM cannot run: {p.diag_unavailable}")
    print(f"policy digest: {policy.digest}")
    return 0

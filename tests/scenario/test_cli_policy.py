"""`gpubot policy show --node`: the policy a node is under (its pool, mode and why), from
the node's labels in its cluster; bad input is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from test_cli import assert_one_line_error, gpubot


def config(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.yaml"
    pools = [
        {
            "name": "canary",
            "mode": "observe",
            "match": {"kubernetes.io/hostname": "gpu-node-07"},
            "blast_radius": {"max_cordoned_count": 1},
            "diag_level": 3,
            "escalation": {"max_resets": 0},
            "evidence_required": True,
        },
        {"name": "fleet", "mode": "quarantine", "clusters": ["other"]},
    ]
    path.write_text(yaml.safe_dump({"policy": {"pools": pools, "mode": "remediate"}}))
    return path


def test_policy_show_names_the_pool_its_mode_and_the_label_that_matched(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    shown = gpubot("policy", "show", "--node", "gpu-node-07", "--config", cfg, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "pool: canary (observe): label kubernetes.io/hostname=gpu-node-07 matched" in (
        shown.stdout
    )
    assert "mode: observe: plan, tell the thread and record; change nothing" in shown.stdout
    other = gpubot(
        "policy", "show", "--node", "gpu-node-02", "--json", "--config", cfg, cwd=tmp_path
    )
    data = json.loads(other.stdout)
    assert (data["pool"]["name"], data["pool"]["mode"]) == ("default", "remediate")
    assert data["pool"]["why"] == "no pool matched: the default policy"
    assert len(data["digest"]) == 16
    assert data["pool_blast_radius"] is None
    assert (data["diagnostics"]["level"], data["escalation"]["max_resets"]) == (1, 1)
    assert data["evidence_required"] is False


def test_policy_show_prints_the_pools_own_caps_diagnostics_and_escalation(
    tmp_path: Path,
) -> None:
    """The pool's own settings, each key it leaves out taken from the global block."""
    cfg = config(tmp_path)
    shown = gpubot("policy", "show", "--node", "gpu-node-07", "--config", cfg, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "pool blast radius: at most 1 nodes or 25% of pool canary's GPU nodes" in out
    assert "1 drain(s) at a time in it (on top of the fleet's cap)" in out
    assert "diagnostics: level 3 (pool)" in out
    assert "escalation (pool): XIDs [13, 31] again within 7d" in out
    assert "0 reset(s) within 7d before a reboot" in out
    assert "evidence before destructive steps: required" in out
    data = json.loads(
        gpubot(
            "policy", "show", "--node", "gpu-node-07", "--json", "--config", cfg, cwd=tmp_path
        ).stdout
    )
    assert data["pool_blast_radius"] == {
        "max_cordoned_fraction": 0.25,
        "max_cordoned_count": 1,
        "max_concurrent_drains": 1,
    }
    assert data["escalation"]["max_reboots"] == 2  # not given by the pool: the global value


def test_policy_show_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    bad = gpubot("policy", "show", "--node", "x;y", "--config", cfg, cwd=tmp_path)
    assert_one_line_error(bad, "--node:")
    unknown = gpubot("policy", "show", "--node", "gpu-node-99", "--config", cfg, cwd=tmp_path)
    assert_one_line_error(unknown, "gpu-node-99")
    cluster = gpubot(
        "policy",
        "show",
        "--node",
        "gpu-node-07",
        "--cluster",
        "nope",
        "--config",
        cfg,
        cwd=tmp_path,
    )
    assert_one_line_error(cluster, "--cluster")
    (tmp_path / "bad.yaml").write_text("policy: {pools: [{name: a, match: {'a b': c}}]}\n")
    label = gpubot(
        "policy", "show", "--node", "gpu-node-07", "--config", tmp_path / "bad.yaml", cwd=tmp_path
    )
    assert_one_line_error(label, "not a Kubernetes label key and value")

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
        {"name": "canary", "mode": "observe", "match": {"kubernetes.io/hostname": "gpu-node-07"}},
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

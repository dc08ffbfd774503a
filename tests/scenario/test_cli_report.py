"""`gpubot report idle` in a subprocess on the simulated cluster: text, JSON, a PNG a person
can read, and one-line errors (Prometheus down, bad arguments)."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import yaml
from test_cli import assert_one_line_error, gpubot


def write_config(tmp_path: Path, **extra: object) -> Path:
    config = {
        "store": {"url": f"sqlite:///{tmp_path / 'gpubot.db'}"},
        "clusters": [{"name": "sim", "state_file": str(tmp_path / "sim.json")}],
        "reports": {"idle": {"prices": {"H100": 12.0}, "teams": {"research": "ml-research"}}},
        **extra,
    }
    path = tmp_path / "gpubot.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_json_lists_idle_pods_with_hours_and_cost(tmp_path: Path) -> None:
    """The simulated fleet's idle research pods, each with its owner, hours idle (24 h, the
    lookback) and cost (GPUs x hours x $12), the namespace total and the fleet average."""
    result = gpubot("report", "idle", "--json", "--config", write_config(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["cluster"] == "sim"
    assert body["error"] is None
    assert body["queries"] == 3
    idle = {(a["namespace"], a["owner"]): a for a in body["idle"]}
    assert set(idle) == {
        ("research", "Deployment/vllm-sandbox"),
        ("research", "Pod/jupyter-alice"),
        ("research", "Pod/jupyter-bob"),
        ("research", "Pod/jupyter-chen"),
    }
    vllm = idle[("research", "Deployment/vllm-sandbox")]
    assert len(vllm["gpus"]) == 4
    assert vllm["idle_hours"] == 24.0
    assert vllm["cost_usd"] == 4 * 24 * 12.0
    assert vllm["util_pct"] < 5
    assert vllm["team"] == "ml-research"
    assert body["idle_cost_usd"] == 8 * 24 * 12.0
    assert body["namespaces"] == [
        {
            "namespace": "research",
            "team": "ml-research",
            "idle_gpus": 8,
            "idle_gpu_hours": 192.0,
            "cost_usd": 2304.0,
        }
    ]
    assert body["fleet"]["gpus"] == 128
    assert 0 < body["fleet"]["avg_util_pct"] < 100


def test_text_and_namespace_filter(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    result = gpubot("report", "idle", "--namespace", "inference", "--config", config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Idle GPUs on sim in inference: 0 allocated GPUs idle")
    assert "No idle GPU allocations." in result.stdout


def test_png_is_a_chart_of_readable_size(tmp_path: Path) -> None:
    """`--png` writes a real PNG (magic bytes, 1400 x 700 pixels from its IHDR header)."""
    png = tmp_path / "idle.png"
    result = gpubot(
        "report", "idle", "--png", png, "--config", write_config(tmp_path), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 700)
    assert len(data) > 20_000


def test_prometheus_down_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """A kubernetes cluster whose Prometheus refuses connections: the report says so on one
    line and exits 1; no traceback, no chart."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{dead}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "prod", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "prod",
            }
        ),
        encoding="utf-8",
    )
    cluster = {
        "name": "prod",
        "backend": "kubernetes",
        "kubeconfig": str(kubeconfig),
        "agent": {"port": 9400},
        "prometheus_url": f"http://127.0.0.1:{dead}",
        "prometheus_retries": 0,
    }
    config = write_config(tmp_path, clusters=[cluster])
    png = tmp_path / "idle.png"
    result = gpubot("report", "idle", "--png", png, "--config", config, cwd=tmp_path)
    assert result.returncode == 1
    line = assert_one_line_error(result, "prod", "Prometheus is unreachable")
    assert str(dead) in line
    assert "report unavailable" in result.stdout
    assert not png.exists()


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    missing_dir = tmp_path / "nope" / "x.png"
    assert_one_line_error(
        gpubot("report", "idle", "--png", missing_dir, "--config", config, cwd=tmp_path),
        "--png: no such directory",
    )
    assert_one_line_error(
        gpubot("report", "idle", "--cluster", "other", "--config", config, cwd=tmp_path),
        "unknown cluster 'other'",
    )

"""Render helm/gpubot with the real Helm engine (helm-python-sdk) and pick objects out of it."""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "helm" / "gpubot"
RELEASE, NAMESPACE = "gpubot", "gpubot"
PG_URL = "postgresql+psycopg://gpubot:s3cret@pg.db.svc:5432/gpubot"

RUNBOOK = """\
name: gpu-health-check
description: Read a node's GPUs through the agent and post the result in the thread.
triggers:
  - command: gpu-health-check
params:
  node:
    description: the GPU node to check
    type: node
target: node
steps:
  - id: check
    action: node.gpu_health
    args: {node: "{{ params.node }}"}
    approval: auto
  - id: report
    action: notify
    args:
      message: "{{ params.node }}: healthy={{ steps.check.output.healthy }}"
    approval: auto
"""

# The values matrix every chart test renders; each case is one way operators install it.
CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "ha-postgres-url": {"ha": {"enabled": True}, "postgresql": {"url": PG_URL}},
    "ha-postgres-existing-secret": {
        "replicaCount": 3,
        "postgresql": {"existingSecret": "gpubot-db", "existingSecretKey": "uri"},
        "secrets": {"existingSecret": "gpubot-tokens"},
    },
    "agent-off": {"agent": {"enabled": False}},
    "agent-read-only": {"agent": {"gpuAdmin": False}},
    "agent-host-port": {
        "agent": {"hostPort": 9400},
        "config": {
            "clusters": [
                {
                    "name": "default",
                    "backend": "kubernetes",
                    "in_cluster": True,
                    "agent": {"address": "internal_ip", "port": 9400},
                }
            ]
        },
    },
    "existing-secret": {"secrets": {"existingSecret": "gpubot-tokens"}},
    "inline-tokens": {
        "secrets": {
            "slackBotToken": "xoxb-1",
            "slackAppToken": "xapp-1",
            "webhookToken": "wh",
            "agentToken": "ag",
            "auditKey": "k",
        }
    },
    "custom-runbooks": {"runbooks": {"extra": {"gpu-health-check.yaml": RUNBOOK}}},
    "monitoring": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
    "no-netpol-no-pvc": {"networkPolicy": {"enabled": False}, "persistence": {"enabled": False}},
}


def require(what: str, ok: bool) -> None:
    """Skip without the real part; with CI=true, fail instead."""
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is missing (CI=true: required)")
    pytest.skip(f"{what} is missing")


def helm() -> ModuleType:
    """helm_python, the Helm Go SDK through its C ABI; skipped (failed in CI) if unusable."""
    try:
        import helm_python
    except (ImportError, OSError) as exc:
        require(f"helm-python-sdk ({exc})", False)
    return helm_python


def binary(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else "")
    require(f"the {name} binary", bool(path))
    return path


class _StrictLoader(yaml.SafeLoader):
    """YAML as the API server reads it: a key given twice is an error, not last-one-wins."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
        dupes = {k for k in keys if keys.count(k) > 1}
        if dupes:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate keys {sorted(dupes)}", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True)
class Rendered:
    """One render: the manifests as objects, their source text, and NOTES.txt."""

    files: dict[str, str]
    objects: tuple[dict[str, Any], ...]
    notes: str

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"{len(found)} {kind} objects named {name}"
        return found[0]

    def text(self, template: str) -> str:
        return self.files[f"gpubot/templates/{template}"]

    @property
    def bot(self) -> dict[str, Any]:
        return self.one("Deployment")

    @property
    def bot_container(self) -> dict[str, Any]:
        (container,) = self.bot["spec"]["template"]["spec"]["containers"]
        return dict(container)

    @property
    def config_text(self) -> str:
        return str(self.one("ConfigMap", f"{RELEASE}-config")["data"]["config.yaml"])


def render(values: dict[str, Any], *, name: str = RELEASE, namespace: str = NAMESPACE) -> Rendered:
    """Render the chart; HelmRenderError propagates (a refused combination)."""
    with helm().Chart.load(CHART) as chart:
        files = chart.render(values, name=name, namespace=namespace)
    objects: list[dict[str, Any]] = []
    notes = ""
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        objects += [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc]
    return Rendered(files=files, objects=tuple(objects), notes=notes)


@functools.cache
def render_case(case: str) -> Rendered:
    return render(CASES[case])


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}

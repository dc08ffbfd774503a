"""The chart under GitOps (`helm template`, as Argo CD and Flux render it): the same values
give the same bytes, nothing is generated at render time, nothing is installed by hand."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from gpubot_chart import CASES, CHART, REPO, helm, render, render_case

TEMPLATES = CHART / "templates"


def _files(values: dict[str, Any]) -> dict[str, str]:
    """A fresh render (not the cached one): a new engine, as each `helm template` run is."""
    with helm().Chart.load(CHART) as chart:
        return dict(chart.render(values, name="gpubot", namespace="gpubot"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_renders_of_the_same_values_are_byte_identical(case: str) -> None:
    """Before, every render made a new randAlphaNum agent secret (lookup finds nothing under
    `helm template`), so Argo CD saw a diff, rewrote the Secret and rolled the pods."""
    first, second = _files(CASES[case]), _files(CASES[case])
    assert first.keys() == second.keys()
    for path in first:
        assert first[path].encode() == second[path].encode(), path


def test_no_template_generates_or_looks_up_anything() -> None:
    pattern = re.compile(
        r"\b(randAlphaNum|randAlpha|randNumeric|randAscii|randBytes|uuidv4|"
        r"genPrivateKey|genCA|genSelfSignedCert|lookup|now|date)\b"
    )
    for template in sorted(TEMPLATES.iterdir()):
        text = template.read_text()
        # Comments may name them; code may not.
        code = re.sub(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", "", text, flags=re.S)
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
        found = pattern.findall(" ".join(re.findall(r"\{\{.*?\}\}", code, flags=re.S)))
        assert found == [], f"{template.name}: {found}"


def test_without_token_values_there_is_no_secret_and_no_agent_master() -> None:
    rendered = render_case("default")
    assert rendered.all("Secret") == []
    given = render({"secrets": {"webhookToken": "wh"}})
    assert set(given.one("Secret")["data"]) == {"GPUBOT_WEBHOOK_TOKEN"}


def test_bot_and_agent_mount_projected_tokens_for_the_configured_audience() -> None:
    """The agent always mounts its own token; the bot mounts one only with botAudience:
    shared (perNode, the default, requests a token per node and binds it to its pod)."""
    values = {"identity": {"audience": "gpubot.example.com", "tokenSeconds": 900}}
    for bot_audience, mounted in (("perNode", False), ("shared", True)):
        rendered = render({"identity": {**values["identity"], "botAudience": bot_audience}})
        bot = rendered.bot["spec"]["template"]["spec"]
        agent = rendered.one("DaemonSet")["spec"]["template"]["spec"]
        pods = (bot, agent) if mounted else (agent,)
        for pod in pods:
            (volume,) = [v for v in pod["volumes"] if v["name"] == "identity"]
            (source,) = volume["projected"]["sources"]
            assert source["serviceAccountToken"] == {
                "path": "token",
                "audience": "gpubot.example.com",
                "expirationSeconds": 900,
            }
        assert ("identity" in {v["name"] for v in bot["volumes"]}) is mounted
        config = yaml.safe_load(rendered.config_text)
        (cluster,) = config["clusters"]
        assert cluster["agent"]["identity"] == "serviceaccount"
        assert cluster["agent"]["audience"] == "gpubot.example.com"
        assert cluster["agent"]["service_account"] == agent["serviceAccountName"]
        assert cluster["agent"]["bot_service_account"] == bot["serviceAccountName"]
        expected = "shared" if mounted else "per_node"
        assert cluster["agent"]["bot_audience"] == expected
        env = {e["name"]: e.get("value") for e in agent["containers"][0]["env"]}
        assert env["GPUBOT_AGENT__AUDIENCE"] == "gpubot.example.com"
        assert env["GPUBOT_AGENT__BOT_AUDIENCE"] == expected
        bot_env = {e["name"]: e for e in bot["containers"][0]["env"]}
        assert bot_env["GPUBOT_POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.uid"
        roles = {r["metadata"]["name"] for r in rendered.all("Role")}
        assert ("gpubot-agent-tokens" in roles) is not mounted


def test_agent_node_selector_tolerations_and_priority_are_honoured() -> None:
    values = {
        "agent": {
            "nodeSelector": {"pool": "training"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoExecute"}
            ],
            "priorityClassName": "system-node-critical",
        }
    }
    pod = render(values).one("DaemonSet")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "training"}
    assert pod["priorityClassName"] == "system-node-critical"
    keys = [t["key"] for t in pod["tolerations"]]
    # The operator's list replaces the default GPU taint; the quarantine taint always stays.
    assert keys == ["gpubot.io/xid", "dedicated"]
    default = render_case("default").one("DaemonSet")["spec"]["template"]["spec"]
    assert "nodeSelector" not in default
    assert "priorityClassName" not in default
    assert [t["key"] for t in default["tolerations"]] == ["gpubot.io/xid", "nvidia.com/gpu"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"agent": {"nodeSelector": {"pool": 3}}}, "at '/agent/nodeSelector/pool'"),
        ({"agent": {"tolerations": "all"}}, "at '/agent/tolerations'"),
        ({"agent": {"priorityClassName": 5}}, "at '/agent/priorityClassName'"),
        ({"agent": {"tokenDir": "/etc/gpubot/agent"}}, "additional properties 'tokenDir'"),
        ({"identity": {"tokenSeconds": 60}}, "at '/identity/tokenSeconds'"),
        ({"identity": {"audience": "a b"}}, "at '/identity/audience'"),
    ],
)
def test_schema_checks_the_new_values(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm().HelmValuesError) as caught:
        render(values)
    assert message in str(caught.value)


def test_install_asks_for_nothing_outside_helm_install() -> None:
    """No node provisioning: the Kubernetes install page never SSHes to a node or copies tokens."""
    deployment = (REPO / "docs" / "install" / "kubernetes.md").read_text()
    assert "ssh" not in deployment.lower()
    assert "agent-token" not in deployment
    assert "tokenDir" not in deployment
    assert "GPUBOT_AGENT_TOKEN" not in deployment

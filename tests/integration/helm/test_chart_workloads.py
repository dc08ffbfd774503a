"""The bot Deployment and the agent DaemonSet as rendered: security, probes, placement, store,
secrets, HA, disruption budget and network policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gpubot_chart import CASES, REPO, env_of, render, render_case

TOKENS = [
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_APP_TOKEN",
    "GPUBOT_WEBHOOK_TOKEN",
    "GPUBOT_AGENT_TOKEN",
    "GPUBOT_AUDIT_KEY",
]


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"])


def _agent(case: str) -> dict[str, Any]:
    return render_case(case).one("DaemonSet")


def _quarantine_taint_key() -> str:
    """The taint key the shipped xid79 runbook puts on a quarantined node."""
    runbook = yaml.safe_load(Path(REPO / "runbooks" / "xid79.yaml").read_text())
    (key,) = {s["args"]["key"] for s in runbook["steps"] if s["action"] == "node.taint"}
    return str(key)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bot_runs_non_root_read_only_without_capabilities(case: str) -> None:
    """Restricted Pod Security: uid 10001, read-only root, no capabilities, RuntimeDefault."""
    rendered = render_case(case)
    pod = _pod(rendered.bot)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = rendered.bot_container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert not pod.get("hostPID")
    assert not pod.get("hostNetwork")
    # A read-only root still needs somewhere to write: /tmp and the data directory.
    mounts = {m["mountPath"]: m for m in rendered.bot_container["volumeMounts"]}
    assert {"/tmp", "/var/lib/gpubot", "/etc/gpubot/config"} <= set(mounts)
    assert mounts["/etc/gpubot/config"]["readOnly"] is True


def test_bot_probes_hit_healthz_and_readyz_on_the_served_port() -> None:
    """Liveness on /healthz, readiness on /readyz, on the port the config tells gpubot to use."""
    rendered = render_case("default")
    c = rendered.bot_container
    (port,) = c["ports"]
    assert port == {"name": "http", "containerPort": 8080, "protocol": "TCP"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    config = yaml.safe_load(rendered.config_text)
    assert config["web"] == {"host": "0.0.0.0", "port": 8080}
    assert c["args"] == ["serve", "--config", "/etc/gpubot/config/config.yaml"]
    assert c["resources"]["requests"]
    assert c["resources"]["limits"]["memory"]


def test_single_replica_keeps_sqlite_on_a_volume_claim() -> None:
    """Default: one replica, SQLite in the PVC, Recreate so two pods never share the file."""
    rendered = render_case("default")
    bot = rendered.bot
    assert bot["spec"]["replicas"] == 1
    assert bot["spec"]["strategy"] == {"type": "Recreate"}
    pvc = rendered.one("PersistentVolumeClaim")
    volumes = {v["name"]: v for v in _pod(bot)["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    config = yaml.safe_load(rendered.config_text)
    assert config["store"]["url"] == "sqlite:////var/lib/gpubot/gpubot.db"
    assert config["leader_election"]["enabled"] is False
    assert "GPUBOT_STORE__URL" not in env_of(rendered.bot_container)
    # No Lease Role (only the agents' token Role).
    assert [r["metadata"]["name"] for r in rendered.all("Role")] == ["gpubot-agent-tokens"]


@pytest.mark.parametrize(
    ("case", "secret", "key"),
    [
        ("ha-postgres-url", "gpubot", "postgresql-url"),
        ("ha-postgres-existing-secret", "gpubot-db", "uri"),
    ],
)
def test_ha_takes_postgresql_from_a_secret_and_elects_a_leader(
    case: str, secret: str, key: str
) -> None:
    """HA: the URL only from a Secret (GPUBOT_STORE__URL), a Lease, no PVC, spread replicas."""
    rendered = render_case(case)
    env = env_of(rendered.bot_container)
    assert env["GPUBOT_STORE__URL"]["valueFrom"]["secretKeyRef"] == {"name": secret, "key": key}
    assert env["GPUBOT_LEADER_ELECTION__IDENTITY"]["valueFrom"]["fieldRef"] == {
        "fieldPath": "metadata.name"
    }
    assert "postgresql" not in rendered.config_text  # never in the ConfigMap
    config = yaml.safe_load(rendered.config_text)
    assert "store" not in config
    assert config["leader_election"] == {
        "enabled": True,
        "namespace": "gpubot",
        "lease_name": "gpubot-leader",
    }
    assert rendered.all("PersistentVolumeClaim") == []
    assert rendered.bot["spec"]["strategy"]["type"] == "RollingUpdate"
    anti = _pod(rendered.bot)["affinity"]["podAntiAffinity"]
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"][
        "topologyKey"
    ] == ("kubernetes.io/hostname")
    assert rendered.one("PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_postgresql_url_from_values_lands_in_the_secret_only() -> None:
    """A URL given in values is stored in the chart's Secret, base64, and nowhere else."""
    import base64

    rendered = render_case("ha-postgres-url")
    secret = rendered.one("Secret")
    url = CASES["ha-postgres-url"]["postgresql"]["url"]
    assert base64.b64decode(secret["data"]["postgresql-url"]).decode() == url
    others = [o for o in rendered.objects if o["kind"] != "Secret"]
    assert url not in yaml.safe_dump_all(others)


@pytest.mark.parametrize("case", ["default", "existing-secret", "inline-tokens"])
def test_tokens_reach_the_bot_from_one_secret(case: str) -> None:
    """All six tokens as optional secretKeyRefs; existingSecret replaces the chart's Secret."""
    rendered = render_case(case)
    env = env_of(rendered.bot_container)
    existing = CASES[case].get("secrets", {}).get("existingSecret")
    name = existing or "gpubot"
    for token in TOKENS:
        assert env[token]["valueFrom"]["secretKeyRef"] == {
            "name": name,
            "key": token,
            "optional": True,
        }
    if existing:
        assert rendered.all("Secret") == []
    else:
        given = CASES[case].get("secrets", {})
        secrets = rendered.all("Secret")
        data = secrets[0]["data"] if secrets else {}
        assert set(data) <= set(TOKENS)
        assert ("SLACK_BOT_TOKEN" in data) == bool(given.get("slackBotToken"))
        # Nothing generated: the agents' master only when given (for hmac hosts).
        assert ("GPUBOT_AGENT_TOKEN" in data) == bool(given.get("agentToken"))
    if CASES[case].get("agent", {}).get("enabled", True):
        # The agents hold no token but their pod's own ServiceAccount token.
        agent_env = env_of(_pod(_agent(case))["containers"][0])
        assert not {k for k in agent_env if k in TOKENS}
        assert agent_env["GPUBOT_AGENT__IDENTITY"]["value"] == "serviceaccount"


def test_agent_runs_the_nvml_driver_on_gpu_nodes_only() -> None:
    """nodeAffinity on nvidia.com/gpu.present=true; GPU and quarantine taints tolerated."""
    ds = _agent("default")
    pod = _pod(ds)
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}
    ]
    tolerated = {(t["key"], t["effect"]) for t in pod["tolerations"]}
    assert ("nvidia.com/gpu", "NoSchedule") in tolerated
    assert (_quarantine_taint_key(), "NoSchedule") in tolerated
    (c,) = pod["containers"]
    assert c["args"][:3] == ["agent", "--driver", "nvml"]
    assert c["args"][-2:] == ["--node", "$(NODE_NAME)"]
    env = env_of(c)
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["GPUBOT_AGENT__BOT_URL"]["value"] == "http://gpubot.gpubot.svc:8080"
    assert env["GPUBOT_AGENT__CLUSTER"]["value"] == "default"
    # Alive while the process answers; ready only while NVML does (GET /readyz).
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["readinessProbe"]["timeoutSeconds"] >= 3  # the agent waits 2 s for NVML
    assert "hostPort" not in c["ports"][0]  # the bot reaches the agent pod on the pod network
    assert env["GPUBOT_AGENT__BOT_SERVICE_ACCOUNT"]["value"] == (
        "system:serviceaccount:gpubot:gpubot"
    )
    published = render_case("agent-host-port").one("DaemonSet")
    assert _pod(published)["containers"][0]["ports"][0]["hostPort"] == 9400


def test_agent_reaches_the_gpu_operators_host_engine_on_its_node_by_default() -> None:
    """agent.dcgmHostPort (default 5555, the GPU Operator's nvidia-dcgm): the agent's dcgmi
    talks to nv-hostengine at the node's own address (the downward API's status.hostIP,
    expanded by the kubelet); 0 leaves dcgmi its own default."""
    values = {
        **CASES["default"],
        "agent": {**CASES["default"].get("agent", {}), "dcgmHostPort": 0},
    }
    assert "GPUBOT_AGENT__DCGM_HOST" not in env_of(
        _pod(render(values).one("DaemonSet"))["containers"][0]
    )
    env = env_of(_pod(_agent("default"))["containers"][0])
    assert env["HOST_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
    assert env["GPUBOT_AGENT__DCGM_HOST"]["value"] == "$(HOST_IP):5555"
    names = list(env)
    assert names.index("HOST_IP") < names.index("GPUBOT_AGENT__DCGM_HOST")  # defined first


def test_agent_has_only_the_device_access_nvml_needs() -> None:
    """No privileged mode, host PID/network or hostPath: the NVIDIA runtime gives the devices,
    and CAP_SYS_ADMIN (as root) is the one capability, for power limits and resets."""
    pod = _pod(_agent("default"))
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["hostPID"] is False
    assert pod["hostNetwork"] is False
    assert pod["automountServiceAccountToken"] is False
    # No hostPath: the agent's identity is its pod's projected token, nothing from the node.
    assert [v for v in pod["volumes"] if "hostPath" in v] == []
    projected = {v["name"] for v in pod["volumes"] if "projected" in v}
    assert projected == {"identity", "kube-api"}
    for mount in pod["containers"][0]["volumeMounts"]:
        assert mount.get("readOnly") is True or mount["name"] == "tmp"
    assert pod["securityContext"]["runAsUser"] == 0
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["privileged"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    # The API server rejects allowPrivilegeEscalation: false together with SYS_ADMIN.
    assert "allowPrivilegeEscalation" not in sc
    env = env_of(c)
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"]["value"] == "utility"


def test_read_only_agent_drops_root_and_every_capability() -> None:
    """agent.gpuAdmin=false: reads only, as uid 10001 with nothing added."""
    pod = _pod(_agent("agent-read-only"))
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    sc = pod["containers"][0]["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["allowPrivilegeEscalation"] is False
    env = env_of(pod["containers"][0])
    assert env["GPUBOT_AGENT__READ_ONLY"]["value"] == "true"  # every action 403
    assert "GPUBOT_AGENT__READ_ONLY" not in env_of(_pod(_agent("default"))["containers"][0])


def test_every_agent_privilege_carries_its_reason() -> None:
    """Each privileged setting in the rendered DaemonSet has a comment right above it."""
    lines = render_case("default").text("agent-daemonset.yaml").splitlines()
    privileged = ("runtimeClassName:", "hostPID:", "runAsUser: 0", "add: [SYS_ADMIN]")
    for needle in privileged:
        (at,) = [i for i, line in enumerate(lines) if line.strip().startswith(needle)]
        assert lines[at - 1].strip().startswith("#"), f"{needle} has no reason above it"


def test_agent_off_renders_no_agent_objects() -> None:
    rendered = render_case("agent-off")
    assert rendered.all("DaemonSet") == []
    names = {o["metadata"]["name"] for o in rendered.objects}
    assert "gpubot-agent" not in names


def test_network_policy_admits_alertmanager_and_reaches_what_the_bot_calls() -> None:
    """Ingress on the http port from Alertmanager, Prometheus and the agents; egress to DNS,
    HTTPS (Slack), the kube API, Prometheus, the agents' hostPort and (HA) PostgreSQL."""
    default = render_case("default").one("NetworkPolicy", "gpubot")
    (ingress,) = default["spec"]["ingress"]
    assert ingress["ports"] == [{"port": "http", "protocol": "TCP"}]
    sources = [f.get("podSelector", {}).get("matchLabels", {}) for f in ingress["from"]]
    assert {"app.kubernetes.io/name": "alertmanager"} in sources
    assert {"app.kubernetes.io/name": "prometheus"} in sources
    assert any(s.get("app.kubernetes.io/component") == "agent" for s in sources)

    def egress_ports(policy: dict[str, Any]) -> set[int]:
        return {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}

    assert egress_ports(default) == {53, 443, 6443, 9090, 9400}
    ha = render_case("ha-postgres-url").one("NetworkPolicy", "gpubot")
    assert egress_ports(ha) == {53, 443, 6443, 9090, 9400, 5432}
    # The agents: their pods only, by label (no CIDR), unless a hostPort is published.
    (to_agents,) = [r for r in default["spec"]["egress"] if r["ports"][0]["port"] == 9400]
    assert to_agents["to"] == [
        {"podSelector": {"matchLabels": {**_agent("default")["spec"]["selector"]["matchLabels"]}}}
    ]
    agent_policy = render_case("default").one("NetworkPolicy", "gpubot-agent")
    (ingress,) = agent_policy["spec"]["ingress"]
    assert ingress["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "bot"
    # Prometheus scrapes the agents' /metrics, as it does the bot's.
    assert ingress["from"][1] == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
    host = render_case("agent-host-port").one("NetworkPolicy", "gpubot")
    assert any("ipBlock" in t for r in host["spec"]["egress"] for t in r.get("to", []))
    assert render_case("no-netpol-no-pvc").all("NetworkPolicy") == []


def test_without_persistence_the_store_is_an_empty_dir() -> None:
    rendered = render_case("no-netpol-no-pvc")
    volumes = {v["name"]: v for v in _pod(rendered.bot)["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}
    assert rendered.all("PersistentVolumeClaim") == []


def test_service_and_disruption_budget_select_the_bot_pods() -> None:
    """The Service and the PDB select exactly the bot's pod labels, not the agents'."""
    rendered = render_case("default")
    pod_labels = rendered.bot["spec"]["template"]["metadata"]["labels"]
    service = rendered.one("Service")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    pdb = rendered.one("PodDisruptionBudget")
    for selector in (service["spec"]["selector"], pdb["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= pod_labels.items()
        assert selector["app.kubernetes.io/component"] == "bot"


def test_config_and_secret_changes_roll_the_pods() -> None:
    """Checksums of the ConfigMap and Secret in the pod template: new runbooks restart the bot."""
    plain = render_case("default").bot["spec"]["template"]["metadata"]["annotations"]
    custom = render_case("custom-runbooks").bot["spec"]["template"]["metadata"]["annotations"]
    assert plain["checksum/config"] != custom["checksum/config"]

"""The chart renders with the real Helm engine for every values case, lints clean, and every
manifest validates against the Kubernetes schemas; impossible combinations refuse to render."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from gpubot_chart import CASES, CHART, RELEASE, helm, render, render_case

# Prometheus Operator CRDs: kubernetes-validate ships only the built-in kinds' schemas, so
# these get the structural checks below (and promtool, in test_chart_monitoring.py).
CRD_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}


def _kube_version() -> str:
    """The newest Kubernetes release kubernetes-validate has schemas for."""
    return str(kubernetes_validate.latest_version())


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_manifest_validates_against_the_kubernetes_schemas(case: str) -> None:
    """Strict schemas (unknown fields are errors) of the newest Kubernetes version shipped."""
    rendered = render_case(case)
    assert rendered.objects
    version = _kube_version()
    checked = 0
    for obj in rendered.objects:
        if obj["kind"] in CRD_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{case}: {obj['kind']}/{obj['metadata']['name']}: {exc.message}")
        checked += 1
    assert checked == len([o for o in rendered.objects if o["kind"] not in CRD_KINDS])


def test_the_validator_catches_a_broken_manifest() -> None:
    """The schema check is not hollow: a typo'd field in a rendered Deployment fails it."""
    bot = dict(render_case("default").bot)
    broken: dict[str, Any] = {**bot, "spec": {**bot["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, _kube_version(), strict=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_objects_are_named_and_namespaced_once(case: str) -> None:
    """Every object has a unique kind/name; namespaced ones live in the release namespace."""
    rendered = render_case(case)
    keys = [(o["kind"], o["metadata"]["name"]) for o in rendered.objects]
    assert len(keys) == len(set(keys))
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    for obj in rendered.objects:
        assert obj["metadata"]["name"].startswith(RELEASE)
        if obj["kind"] not in cluster_scoped:
            assert obj["metadata"]["namespace"] == "gpubot"


def test_crds_are_structurally_sound() -> None:
    """ServiceMonitor, PodMonitor and PrometheusRule: the right API group, and specs of the
    right shape."""
    rendered = render_case("monitoring")
    monitor = rendered.one("ServiceMonitor")
    rule = rendered.one("PrometheusRule")
    agents = rendered.one("PodMonitor")
    for obj in (monitor, rule, agents):
        assert obj["apiVersion"] == "monitoring.coreos.com/v1"
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert set(endpoint) == {"port", "path", "interval"}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["gpubot"]}
    (endpoint,) = agents["spec"]["podMetricsEndpoints"]
    assert set(endpoint) == {"port", "path", "interval"}
    assert agents["spec"]["namespaceSelector"] == {"matchNames": ["gpubot"]}
    assert set(rule["spec"]) == {"groups"}
    for group in rule["spec"]["groups"]:
        assert group["name"]
        assert all({"alert", "expr"} <= set(r) for r in group["rules"])


def test_crds_only_when_asked_for() -> None:
    """ServiceMonitor, PodMonitor and PrometheusRule need the Prometheus Operator: off by
    default."""
    kinds = {o["kind"] for o in render_case("default").objects}
    assert not kinds & CRD_KINDS


@pytest.mark.parametrize("case", ["default", "ha-postgres-url", "monitoring", "custom-runbooks"])
def test_lint_has_no_errors_or_warnings(case: str) -> None:
    """`helm lint --strict` for the newest Kubernetes version: only the info about an icon."""
    report = helm().lint(
        CHART, CASES[case], strict=True, namespace="gpubot", kube_version=f"v{_kube_version()}"
    )
    assert report["errors"] == []
    worse_than_info = [m for m in report["messages"] if m["severity"] >= 2]
    assert worse_than_info == []


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"ha": {"enabled": True}},
            "2 replicas need PostgreSQL: set postgresql.url or postgresql.existingSecret",
        ),
        ({"replicaCount": 3}, "3 replicas need PostgreSQL"),
        ({"config": {"store": {"url": "sqlite:///x.db"}}}, "the chart sets config.store itself"),
        ({"config": {"web": {"port": 9000}}}, "the chart sets config.web itself"),
        (
            {"config": {"leader_election": {"enabled": True}}},
            "config.leader_election.enabled is set by the chart",
        ),
        (
            {"runbooks": {"extra": {"../evil": "name: x"}}},
            'runbooks.extra key "../evil" must be a file name ending in .yaml or .yml',
        ),
    ],
)
def test_impossible_values_refuse_to_render(values: dict[str, Any], message: str) -> None:
    """A combination that cannot work stops `helm install` with a one-line reason."""
    h = helm()
    with pytest.raises(h.HelmRenderError) as caught:
        render(values)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value).strip()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replica": 2}, "at '': additional properties 'replica' not allowed"),
        ({"agent": {"gpuadmin": False}}, "at '/agent': additional properties 'gpuadmin'"),
        ({"replicaCount": 0}, "at '/replicaCount'"),
        ({"replicaCount": "two"}, "at '/replicaCount': got string, want integer"),
        ({"postgresql": {"url": "mysql://db/gpubot"}}, "at '/postgresql/url'"),
        ({"serviceMonitor": {"interval": "often"}}, "at '/serviceMonitor/interval'"),
    ],
)
def test_values_schema_names_the_misspelt_or_mistyped_value(
    values: dict[str, Any], message: str
) -> None:
    """values.schema.json: a typo is an error with its path, not a silently ignored key."""
    h = helm()
    with pytest.raises(h.HelmValuesError) as caught:
        render(values)
    assert message in str(caught.value)


def test_every_default_value_is_described_by_the_schema() -> None:
    """The schema closes every values section, so it must know every default key."""
    import json

    schema = json.loads((CHART / "values.schema.json").read_text())
    with helm().Chart.load(CHART) as chart:
        defaults = chart.values

    def walk(values: dict[str, Any], node: dict[str, Any], path: str) -> None:
        if node.get("additionalProperties") is False:
            assert set(values) <= set(node["properties"]), path
        for key, value in values.items():
            child = node.get("properties", {}).get(key)
            if isinstance(value, dict) and child and "properties" in child:
                walk(value, child, f"{path}.{key}")

    walk(defaults, schema, "values")


def test_ha_with_postgresql_renders_two_replicas() -> None:
    """The same HA switch renders once PostgreSQL is given."""
    assert render_case("ha-postgres-url").bot["spec"]["replicas"] == 2
    assert render_case("ha-postgres-existing-secret").bot["spec"]["replicas"] == 3


def test_chart_version_matches_the_package() -> None:
    """appVersion (the default image tag) is the version pyproject.toml builds."""
    import tomllib

    from gpubot_chart import REPO

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    with helm().Chart.load(CHART) as chart:
        meta = chart.metadata
    assert meta["apiVersion"] == "v2"
    assert meta["appVersion"] == project["version"]
    assert render_case("default").bot_container["image"] == f"gpubot:{project['version']}"

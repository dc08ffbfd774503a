"""RBAC: the chart's ClusterRole and Lease Role equal deploy/rbac/clusterrole.yaml, and both
equal what the code asks the API server for, derived from the real kubernetes client."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from gpubot_chart import REPO, render_case
from kubernetes import client

KUBE_BACKEND = REPO / "gpubot" / "backends" / "kube"
Grant = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


def _grants(rules: list[dict[str, Any]]) -> set[Grant]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _deploy_rbac() -> dict[str, dict[str, Any]]:
    """The deploy file's objects by name (gpubot, gpubot-leader-election, …)."""
    docs = yaml.safe_load_all((REPO / "deploy" / "rbac" / "clusterrole.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs}


# -- what the code calls ----------------------------------------------------------------------


def _api_methods_used() -> Iterator[tuple[type[Any], str]]:
    """(client class, method) for every `self.<attr>.<method>` in the kube backend, where
    `self.<attr> = client.<Class>(…)` in the same module."""
    for module in sorted(KUBE_BACKEND.glob("*.py")):
        tree = ast.parse(module.read_text())
        attrs: dict[str, type[Any]] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and isinstance(node.value.func.value, ast.Name)
                and node.value.func.value.id == "client"
                and node.value.func.attr.endswith("Api")
            ):
                for target in node.targets:
                    if isinstance(target, ast.Attribute):
                        attrs[target.attr] = getattr(client, node.value.func.attr)
        constructed = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "client"
            and node.func.attr.endswith("Api")
        ]
        # An API object held anywhere but `self.<attr>` would hide its calls from this scan.
        assert len(constructed) == len(attrs), f"{module.name}: an API client outside self"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
                and node.value.attr in attrs
            ):
                cls = attrs[node.value.attr]
                if callable(getattr(cls, node.attr, None)) and not node.attr.startswith("_"):
                    yield cls, node.attr


def _request_of(cls: type[Any], method: str) -> tuple[str, str]:
    """(HTTP method, path) the real generated client builds for `method` (its serializer,
    the step before sending), with placeholder names."""
    api = cls(client.ApiClient(client.Configuration()))
    serialize = getattr(api, f"_{method}_serialize")
    args = {
        p: "x" if p in ("name", "namespace") else (0 if p == "_host_index" else None)
        for p in inspect.signature(serialize).parameters
    }
    http_method, url = serialize(**args)[:2]
    return str(http_method), urlsplit(str(url)).path


def _grant_for(method: str, path: str) -> Grant:
    """RBAC's view of a request, as the API server's request-info parser derives it."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else None, rest[2:]
    verb = {
        "GET": "get" if name else "list",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if name else "deletecollection",
    }[method]
    if sub:
        resource = f"{resource}/{sub[0]}"
    if method == "POST" and sub:  # POST on a subresource of a named object (eviction)
        verb = "create"
    return group, resource, verb


def _watched() -> Iterator[tuple[type[Any], str]]:
    """(client class, list method) for every `<watch>.stream(LISTER, …)`: a watch is a GET of
    the list with `watch=true`, which RBAC grants as the verb `watch`. LISTER is
    `self.<attr>.<list method>`, or a local function that calls one. The API object may be
    handed in (not built in that module): the method is looked up on the client classes the
    backend builds."""
    classes = {cls for cls, _ in _api_methods_used()}
    for module in sorted(KUBE_BACKEND.glob("*.py")):
        tree = ast.parse(module.read_text())
        functions = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "stream"
                and node.args
            ):
                continue
            lister = node.args[0]
            if module.name == "reflector.py":
                continue  # the generic stream: each Reflector names its LIST (below)
            if isinstance(lister, ast.Name) and lister.id in functions:
                called = [
                    c.func.attr
                    for c in ast.walk(functions[lister.id])
                    if isinstance(c, ast.Call)
                    and isinstance(c.func, ast.Attribute)
                    and c.func.attr.startswith("list_")
                ]
            elif isinstance(lister, ast.Attribute):
                called = [lister.attr]
            else:
                called = []
            assert len(called) == 1, f"{module.name}: cannot tell what a watch stream lists"
            yield _owner(classes, called[0], module.name), called[0]
        # A Reflector (reflector.py) watches what its subclass hands to its constructor:
        # `super().__init__(core.list_…, …)`.
        for cls_node in ast.walk(tree):
            if not (
                isinstance(cls_node, ast.ClassDef)
                and any(
                    isinstance(b, ast.Subscript)
                    and isinstance(b.value, ast.Name)
                    and b.value.id == "Reflector"
                    for b in cls_node.bases
                )
            ):
                continue
            listers = [
                c.args[0].attr
                for c in ast.walk(cls_node)
                if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "__init__"
                and c.args
                and isinstance(c.args[0], ast.Attribute)
            ]
            assert len(listers) == 1, f"{module.name}: cannot tell what {cls_node.name} lists"
            yield _owner(classes, listers[0], module.name), listers[0]


def _owner(classes: set[type[Any]], method: str, module: str) -> type[Any]:
    owners = [cls for cls in classes if callable(getattr(cls, method, None))]
    assert len(owners) == 1, f"{module}: cannot tell whose {method} it is"
    return owners[0]


def _paths(node: ast.expr) -> Iterator[str]:
    """The paths a request's path argument can be: a literal, an f-string (each value a
    placeholder name), or either branch of a conditional."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        yield "".join(
            str(part.value) if isinstance(part, ast.Constant) else "x" for part in node.values
        )
    elif isinstance(node, ast.IfExp):
        yield from _paths(node.body)
        yield from _paths(node.orelse)
    else:
        raise AssertionError(f"cannot tell the path of a request: {ast.dump(node)}")


def _raw_requests() -> Iterator[tuple[str, str]]:
    """(HTTP method, path) for every `self._request(METHOD, PATH, …)` in the kube backend: the
    requests sent as JSON through the adapter's transport, not through a client method."""
    for module in sorted(KUBE_BACKEND.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and node.func.attr == "_request"
            ):
                method = node.args[0]
                assert isinstance(method, ast.Constant), f"{module.name}: a request's method"
                for path in _paths(node.args[1]):
                    yield str(method.value), path


def _code_grants() -> set[Grant]:
    grants = {_grant_for(*_request_of(cls, m)) for cls, m in _api_methods_used()}
    grants |= {_grant_for(method, path) for method, path in _raw_requests()}
    for cls, method in _watched():
        group, resource, _ = _grant_for(*_request_of(cls, method))
        grants |= {(group, resource, "list"), (group, resource, "watch")}  # LIST, then WATCH
    return grants


def test_the_request_mapping_reads_paths_as_the_api_server_does() -> None:
    """The mapping is checked on known requests before it judges the chart."""
    assert _grant_for("GET", "/api/v1/nodes") == ("", "nodes", "list")
    assert _grant_for("PATCH", "/api/v1/nodes/n1") == ("", "nodes", "patch")
    assert _grant_for("POST", "/api/v1/namespaces/a/pods/p/eviction") == (
        "",
        "pods/eviction",
        "create",
    )
    assert _grant_for("GET", "/apis/apps/v1/namespaces/a/deployments/d/scale") == (
        "apps",
        "deployments/scale",
        "get",
    )
    assert _grant_for("PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l") == (
        "coordination.k8s.io",
        "leases",
        "update",
    )


def test_code_needs_exactly_the_chart_rbac() -> None:
    """Every grant is used by some API call in gpubot/backends/kube (a client method, or a
    request the adapter sends as JSON), and every call is granted:
    cluster-wide for the cluster, in the release namespace the Lease and the bot's own
    tokens for the agents (TokenRequest)."""
    rendered = render_case("ha-postgres-url")
    cluster_role = _grants(rendered.one("ClusterRole", "gpubot")["rules"])
    lease_role = _grants(rendered.one("Role", "gpubot-leader-election")["rules"])
    token_role = _grants(rendered.one("Role", "gpubot-agent-tokens")["rules"])
    needed = _code_grants()
    assert needed == cluster_role | lease_role | token_role
    assert {g for g in needed if g[0] == "coordination.k8s.io"} == lease_role
    assert token_role == {("", "serviceaccounts/token", "create")}
    assert not cluster_role & (lease_role | token_role)
    # The bot may request tokens for its own account only.
    [rule] = rendered.one("Role", "gpubot-agent-tokens")["rules"]
    assert rule["resourceNames"] == ["gpubot"]


def test_chart_rbac_equals_the_deploy_file() -> None:
    """helm/ and deploy/rbac/clusterrole.yaml grant the same, so either install is the same."""
    deploy = _deploy_rbac()
    rendered = render_case("ha-postgres-url")
    assert rendered.one("ClusterRole", "gpubot")["rules"] == deploy["gpubot"]["rules"]
    for name in ("gpubot-leader-election", "gpubot-agent-tokens"):
        assert rendered.one("Role", name)["rules"] == deploy[name]["rules"]


def test_no_secrets_no_wildcards_and_bindings_to_the_bot_only() -> None:
    rendered = render_case("ha-postgres-url")
    for role in rendered.all("ClusterRole") + rendered.all("Role"):
        for rule in role["rules"]:
            assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"]
            assert "secrets" not in rule["resources"]
    bindings = [rendered.one("ClusterRoleBinding", "gpubot"), *rendered.all("RoleBinding")]
    for binding in bindings:
        (subject,) = binding["subjects"]
        assert subject == {"kind": "ServiceAccount", "name": "gpubot", "namespace": "gpubot"}
    assert rendered.bot["spec"]["template"]["spec"]["serviceAccountName"] == "gpubot"


def test_the_agents_may_review_tokens_and_nothing_else() -> None:
    """The agent checks the bot's token with the TokenReview API: its whole RBAC."""
    rendered = render_case("default")
    role = rendered.one("ClusterRole", "gpubot-agent")
    assert _grants(role["rules"]) == {("authentication.k8s.io", "tokenreviews", "create")}
    binding = rendered.one("ClusterRoleBinding", "gpubot-agent")
    assert binding["roleRef"]["name"] == "gpubot-agent"
    (subject,) = binding["subjects"]
    assert subject == {"kind": "ServiceAccount", "name": "gpubot-agent", "namespace": "gpubot"}
    agent_pod = rendered.one("DaemonSet")["spec"]["template"]["spec"]
    assert agent_pod["serviceAccountName"] == "gpubot-agent"
    assert render_case("agent-off").all("ClusterRole") == [rendered.one("ClusterRole", "gpubot")]


def test_single_replica_has_no_lease_role() -> None:
    """Leader election, and with it the Lease permission, only with more than one replica."""
    names = {r["metadata"]["name"] for r in render_case("default").all("Role")}
    assert names == {"gpubot-agent-tokens"}
    names = {r["metadata"]["name"] for r in render_case("default").all("RoleBinding")}
    assert names == {"gpubot-agent-tokens"}


def test_each_verb_says_which_feature_uses_it() -> None:
    """In the rendered RBAC every verb line carries a comment."""
    rendered = render_case("ha-postgres-url")
    verbs = [
        line
        for line in rendered.text("rbac.yaml").splitlines()
        if line.strip().startswith("- ") and _verb(line)
    ]
    rules = [
        r for role in rendered.all("ClusterRole") + rendered.all("Role") for r in role["rules"]
    ]
    assert len(verbs) == sum(len(rule["verbs"]) for rule in rules)
    for line in verbs:
        assert "#" in line, line
        assert len(line.split("#", 1)[1].strip()) > 10, line


def _verb(line: str) -> bool:
    word = line.strip()[2:].split("#")[0].strip()
    return word in {"get", "list", "watch", "create", "update", "patch", "delete"}


def test_rules_file_path_is_the_one_documented() -> None:
    assert Path(REPO / "deploy" / "rbac" / "clusterrole.yaml").is_file()

"""Any body at all: the agent-event check answers a refusal or None, never raises, and
accepts only bodies whose every alert is an XID alert of the token's own node."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpubot.domain.incidents.agent_events import (
    AGENT_ALERTNAME,
    AGENT_EVENT_LABELS,
    check_agent_events,
)

NODE = "gpu-node-03"
names = st.sampled_from([*sorted(AGENT_EVENT_LABELS), "pod", "namespace", "node"]) | st.text(
    max_size=6
)
values = st.one_of(
    st.sampled_from([NODE, "gpu-node-04", AGENT_ALERTNAME, "GPUIdleAllocated", "sim", "79"]),
    st.text(max_size=8),
    st.integers(),
    st.none(),
)
labels = st.dictionaries(names, values, max_size=8)
alert = st.one_of(st.fixed_dictionaries({"labels": labels}), st.none(), st.integers(), labels)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)
bodies = st.one_of(
    st.fixed_dictionaries(
        {"alerts": st.lists(alert, max_size=3)},
        optional={"commonLabels": labels | json_values, "groupLabels": labels | json_values},
    ),
    json_values,
)


@settings(max_examples=400, deadline=None)
@given(bodies)
def test_any_body_gets_an_answer_and_only_own_xids_pass(body: Any) -> None:
    raw = json.dumps(body).encode()
    refusal = check_agent_events(raw, node=NODE, clusters=("sim",))
    if refusal is not None:
        assert refusal.status in (400, 403)
        assert "\n" not in refusal.reason
        return
    for a in body["alerts"]:
        assert a["labels"]["alertname"] == AGENT_ALERTNAME
        assert a["labels"]["Hostname"] == NODE
        assert a["labels"]["cluster"] == "sim"
        assert set(a["labels"]) <= AGENT_EVENT_LABELS


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_get_an_answer(raw: bytes) -> None:
    refusal = check_agent_events(raw, node=NODE, clusters=None)
    assert refusal is None or refusal.status in (400, 403)

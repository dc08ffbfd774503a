"""The variables templates see: from the alert, from typed command arguments, from the run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpubot.domain.incidents.correlation import Incident, IncidentStatus
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, StepStatus
from gpubot.domain.runbooks.spec import Runbook
from gpubot.domain.runbooks.variables import (
    STEP_FIELDS,
    alert_context,
    resolve_params,
    run_variables,
)
from gpubot.errors import InputError

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)

RUNBOOK = Runbook.model_validate(
    {
        "name": "xid79",
        "triggers": [{"alertname": "GPUXidError"}],
        "params": {
            "node": {"type": "node", "default": "{{ alert.labels.Hostname }}"},
            "gpu": {"type": "int", "default": "{{ alert.labels.gpu }}", "required": False},
        },
        "target": "node",
        "steps": [{"id": "cordon", "action": "node.cordon", "args": {"node": "{{ params.node }}"}}],
    }
)


def incident(**labels: str) -> Incident:
    return Incident(
        id="inc-1",
        key="k",
        status=IncidentStatus.OPEN,
        alertname="GPUXidError",
        cluster="sim",
        node=labels.get("Hostname"),
        severity="critical",
        summary="XID 79",
        labels=labels,
        annotations={"summary": "XID 79"},
        generator_url="",
        created_at=NOW,
        updated_at=NOW,
    )


def test_a_command_run_sees_empty_alert_variables() -> None:
    assert alert_context(None) == {"alert": {"labels": {}, "annotations": {}}, "incident": {}}


def test_params_render_from_the_alert_and_are_typed() -> None:
    base = alert_context(incident(Hostname="gpu-node-03", gpu="2"))
    assert resolve_params(RUNBOOK, base=base, given={}) == {"node": "gpu-node-03", "gpu": 2}


def test_a_typed_argument_wins_over_the_alert() -> None:
    base = alert_context(incident(Hostname="gpu-node-03"))
    params = resolve_params(RUNBOOK, base=base, given={"node": "gpu-node-07"})
    assert params == {"node": "gpu-node-07", "gpu": None}  # no gpu label: not given


@pytest.mark.parametrize(
    "hostile",
    [
        "gpu-node-03\n--all",
        "../../etc",
        "node;rm -rf",
        "http://169.254.169.254/",
        "\uff27\uff30\uff35-node",  # fullwidth letters
        "",
    ],
)
def test_a_hostile_node_label_is_a_one_line_input_error(hostile: str) -> None:
    base = alert_context(incident(Hostname=hostile))
    with pytest.raises(InputError) as caught:
        resolve_params(RUNBOOK, base=base, given={})
    assert "\n" not in str(caught.value)


def test_an_unknown_argument_names_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"no parameter 'force' \(parameters: node, gpu\)"):
        resolve_params(RUNBOOK, base=alert_context(None), given={"node": "n1", "force": "1"})


def test_a_running_step_sees_earlier_steps_and_the_run() -> None:
    run = Run(
        id="run-1",
        runbook="xid79",
        incident_id="inc-1",
        cluster="sim",
        target="gpu-node-03",
        requested_by="alertmanager",
        status=RunStatus.RUNNING,
        dry_run=False,
        context={"alert": {"labels": {}}, "params": {"node": "gpu-node-03"}},
        created_at=NOW,
        updated_at=NOW,
    )
    done = StepState("run-1", "cordon", 0, StepStatus.SUCCEEDED, output={"cordoned": True})
    variables = run_variables(run, [done, StepState("run-1", "drain", 1)])
    assert variables["params"] == {"node": "gpu-node-03"}
    assert variables["steps"]["cordon"] == {
        "status": "succeeded",
        "output": {"cordoned": True},
        "error": "",
    }
    assert set(variables["steps"]["drain"]) == set(STEP_FIELDS)
    assert variables["run"] == {"id": "run-1", "requested_by": "alertmanager", "dry_run": False}

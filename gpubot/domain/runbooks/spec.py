"""Runbook file format (contract): triggers, parameters and ordered steps."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpubot.domain.control.approvals import ApprovalLevel
from gpubot.domain.incidents.matchers import Matcher, all_match, parse_matcher
from gpubot.domain.runbooks.durations import parse_duration

_ID = r"^[a-z0-9][a-z0-9_-]{0,62}$"
ParamType = Literal["string", "node", "int", "namespace", "pod"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Trigger(_Strict):
    """Fire on an Alertmanager alert (alertname + matchers) and/or a slash-command name."""

    alertname: str | None = None
    matchers: tuple[str, ...] = ()
    command: str | None = Field(default=None, pattern=_ID)

    @field_validator("matchers")
    @classmethod
    def _valid_matchers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for text in value:
            parse_matcher(text)  # raises ValueError with the reason
        return value

    @model_validator(mode="after")
    def _something(self) -> Trigger:
        if not self.alertname and not self.command:
            raise ValueError("a trigger needs an alertname or a command")
        if self.matchers and not self.alertname:
            raise ValueError("matchers need an alertname")
        return self

    def parsed_matchers(self) -> tuple[Matcher, ...]:
        return tuple(parse_matcher(m) for m in self.matchers)

    def matches_alert(self, labels: Mapping[str, str]) -> bool:
        return (
            bool(self.alertname)
            and labels.get("alertname") == self.alertname
            and all_match(self.parsed_matchers(), labels)
        )


class Param(_Strict):
    """A run parameter: given as `key=value` in a command, else rendered from `default`."""

    description: str = ""
    type: ParamType = "string"
    default: str | None = None
    required: bool = True


class Step(_Strict):
    id: str = Field(pattern=_ID)
    action: str = Field(min_length=1)
    description: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    approval: ApprovalLevel = "required"
    approvers: str | None = None
    when: str | None = None
    timeout: float = 60.0
    retries: int = Field(default=0, ge=0, le=10)
    retry_delay: float = 5.0
    on_failure: str = "stop"

    @field_validator("timeout", "retry_delay", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        if not isinstance(value, str | int | float):
            raise ValueError("expected a duration such as 30s or 5m")
        return parse_duration(value)

    @field_validator("on_failure")
    @classmethod
    def _on_failure(cls, value: str) -> str:
        if value in ("stop", "continue") or re.fullmatch(r"goto:[a-z0-9][a-z0-9_-]*", value):
            return value
        raise ValueError("on_failure must be stop, continue or goto:<step id>")

    @property
    def goto(self) -> str | None:
        return (
            self.on_failure.removeprefix("goto:") if self.on_failure.startswith("goto:") else None
        )


class Runbook(_Strict):
    name: str = Field(pattern=_ID)
    description: str = ""
    triggers: tuple[Trigger, ...] = Field(min_length=1)
    params: dict[str, Param] = Field(default_factory=dict)
    target: str | None = None  # name of the param that holds the node acted on
    # What happens to pending steps when the incident resolves: cancel them (default), or
    # continue (for runbooks whose later steps revert earlier ones).
    on_resolve: Literal["cancel", "continue"] = "cancel"
    steps: tuple[Step, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Runbook:
        ids = [s.id for s in self.steps]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate step id(s): {', '.join(dupes)}")
        for i, step in enumerate(self.steps):
            # Forward jumps only: a runbook can never loop.
            if step.goto is not None and step.goto not in ids[i + 1 :]:
                raise ValueError(
                    f"step {step.id}: on_failure goto:{step.goto} must name a later step"
                )
        if self.target is not None and self.target not in self.params:
            raise ValueError(f"target {self.target!r} is not one of the params")
        return self

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)

    def matches_alert(self, labels: Mapping[str, str]) -> bool:
        return any(t.matches_alert(labels) for t in self.triggers)

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(t.command for t in self.triggers if t.command)


def runbooks_for_alert(runbooks: Iterable[Runbook], labels: Mapping[str, str]) -> list[Runbook]:
    """The runbooks an alert starts, in the order given."""
    return [rb for rb in runbooks if rb.matches_alert(labels)]

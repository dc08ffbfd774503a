"""The engine writes audit events in one place: AuditTrail stamps them with the engine's clock
and appends them; nothing else in the engine or the actions builds or appends one."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpubot.domain.control.audit import AuditDraft, AuditEvent
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.clock import FakeClock

PACKAGE = Path(__file__).resolve().parents[3] / "gpubot"
T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


class Log:
    def __init__(self) -> None:
        self.drafts: list[AuditDraft] = []

    async def append(self, draft: AuditDraft) -> AuditEvent:
        self.drafts.append(draft)
        return AuditEvent(**{**draft.__dict__, "seq": len(self.drafts)})

    def __getattr__(self, name: str) -> Any:  # the rest of AuditLog is not used here
        raise AttributeError(name)


async def test_record_stamps_the_engines_clock_and_appends() -> None:
    log, clock = Log(), FakeClock(T0)
    trail = AuditTrail(log, clock)  # type: ignore[arg-type]
    event = await trail.record("approval.refused", actor="U1", result={"accepted": False})

    assert event.seq == 1
    [draft] = log.drafts
    assert (draft.ts, draft.actor, draft.kind) == (T0, "U1", "approval.refused")
    assert draft.result == {"accepted": False}


def test_a_draft_is_not_appended_until_its_state_change_carries_it() -> None:
    log = Log()
    draft = AuditTrail(log, FakeClock(T0)).draft("run.created", actor="U1", run_id="run-1")  # type: ignore[arg-type]
    assert (draft.ts, draft.run_id) == (T0, "run-1")
    assert log.drafts == []


def test_no_other_engine_or_action_module_builds_or_appends_an_audit_event() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for folder in ("engine", "actions")
        for path in sorted((PACKAGE / folder).glob("*.py"))
        if path.name != "audit_trail.py"
        and re.search(r"\bAuditDraft\(|\.store\.append\(", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []

"""The single entry point for the web hook, Slack, the CLI and the scheduler."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Literal

from gpubot.domain import messages
from gpubot.domain.control.approvals import ApprovalStatus, VoteOutcome, cast_vote
from gpubot.domain.control.safety_caps import check_attempts
from gpubot.domain.control.signed_votes import SubmittedVote, VoteMessage
from gpubot.domain.incidents.alerts import AlertmanagerPayload, ParsedWebhook
from gpubot.domain.incidents.correlation import (
    Incident,
    observations,
)
from gpubot.domain.incidents.intake import IntakeKind, IntakeOutcome, IntakeSummary
from gpubot.domain.results import Message
from gpubot.domain.runbooks.plans import Plan
from gpubot.domain.runbooks.runs import Run, RunStatus, StepState, new_run_id
from gpubot.domain.runbooks.spec import Runbook, runbooks_for_alert
from gpubot.engine.audit_trail import AuditTrail
from gpubot.engine.blast_radius import BlastRadiusGate
from gpubot.engine.chat import best_effort
from gpubot.engine.deps import Engine
from gpubot.engine.evidence_pruning import EvidencePruner
from gpubot.engine.executor import Executor
from gpubot.engine.interventions import (
    Intervention,
    Interventions,
)
from gpubot.engine.leader_loop import LeaderLoop
from gpubot.engine.node_faults import NodeFaults
from gpubot.engine.objections import MemberOf, Objection, record_objection
from gpubot.engine.planning import (
    plan_alerts,
    plan_command,
    plan_run,
    run_inputs,
    runbook_named,
)
from gpubot.engine.queries import Queries
from gpubot.engine.signed_votes import VoteCounter, submit
from gpubot.engine.telemetry import approval_decided
from gpubot.errors import ApprovalError, GpubotError, InputError, NotFoundError, RunDeferred

log = logging.getLogger(__name__)
_ACTIVE = (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD)
_FOLLOW_UP = (IntakeKind.OPENED, IntakeKind.INCIDENT_RESOLVED)  # what process() acts on


class GpubotService:
    def __init__(self, engine: Engine, *, dry_run: bool = False) -> None:
        self.e = engine
        # Every event the engine writes.
        self.trail = AuditTrail(engine.store, engine.clock, engine.tally)
        # What the interfaces in front of the service may read.
        self.read = Queries(engine, warming=lambda: self.background.warming)
        self.dry_run = dry_run  # config `dry_run: true`: every run plans and records only
        self.gate = BlastRadiusGate(engine)  # the caps: held steps, and what wakes them
        # Start-up, the tick, following other replicas, waking held runs: the leader's loop.
        self.background = LeaderLoop(self)
        self.gate.on_release = self.background.wake_soon
        self.executor = Executor(engine, self.gate)
        self.executor.on_finished = self._run_ended
        self.faults = NodeFaults(
            engine, self.trail, say=self._post, opened=self._follow_up_opened
        )  # another fault of a node: a follow-up incident, held while a run acts
        self._tasks: set[asyncio.Task[Any]] = set()
        # Incidents whose run waits for another run of its runbook on the same node to end
        # (RunDeferred): started when a run ends here; the tick starts them after a restart.
        self.deferred: set[str] = set()
        self.counter = VoteCounter(self)  # signed break-glass votes, counted by the leader
        # Evidence older than evidence.keep_days, deleted by the leader on the record.
        self.pruner = EvidencePruner(
            engine.store, engine.clock, keep_days=engine.evidence_keep_days
        )

    # -- intake ---------------------------------------------------------------------------

    async def ingest(self, webhook: ParsedWebhook | AlertmanagerPayload) -> IntakeSummary:
        """Store the good alerts and record the rejected ones, durably (the caller answers
        2xx only after this returns). A rejected alert never holds back the others."""
        if isinstance(webhook, AlertmanagerPayload):
            webhook = ParsedWebhook(payload=webhook, rejected=())
        now = self.e.clock.now()
        outcomes: list[IntakeOutcome] = []
        if webhook.payload is not None:
            outcomes = await self.e.store.ingest(
                observations(webhook.payload, default_cluster=self.e.alert_cluster), now=now
            )
        for bad in webhook.rejected:
            log.warning(
                "alert rejected: %s (alertname %r)",
                bad.reason,
                bad.alertname,
                extra={"event": "alert.rejected", "reason": bad.reason},
            )
            await self.trail.record(
                "alert.rejected",
                actor="alertmanager",
                target=bad.alertname or None,
                args={"fingerprint": bad.fingerprint, "index": bad.index},
                reason=bad.reason,
            )
            outcomes.append(IntakeOutcome(bad.fingerprint, IntakeKind.REJECTED, None, bad.reason))
        return IntakeSummary(tuple(outcomes))

    async def receive(self, webhook: ParsedWebhook | AlertmanagerPayload) -> IntakeSummary:
        """ingest(), then process() in the background: what the webhook does, answering as
        soon as the alerts are stored."""
        summary = await self.ingest(webhook)
        self.spawn(self.process(summary))
        return summary

    async def process(self, summary: IntakeSummary) -> None:
        """Follow-up after intake: threads, plans, runs. Recovery redoes it after a crash."""
        attached: dict[str, set[str]] = {}
        for outcome in summary.outcomes:
            # Only an XID alert can bring another fault of its node: the rest cost nothing.
            if (
                outcome.kind is IntakeKind.ATTACHED
                and outcome.incident_id is not None
                and outcome.fault is not None
            ):
                attached.setdefault(outcome.incident_id, set()).add(outcome.fingerprint)
            if outcome.kind is IntakeKind.CONFLICT and outcome.incident_id is not None:
                await self._note_conflict(outcome)
                continue
            # ATTACHED alerts join the incident's run silently: in a storm, one message per
            # alert would bury the thread (the alerts stay listed in the store). Nothing to
            # read for them either: a storm is mostly ATTACHED and DUPLICATE outcomes.
            if outcome.incident_id is None or outcome.kind not in _FOLLOW_UP:
                continue
            incident = outcome.incident or await self.e.store.get_incident(outcome.incident_id)
            if outcome.kind is IntakeKind.OPENED:
                await self.audit_incident(incident, "incident.opened", outcome.fingerprint)
                await self.notify(self.e.notifier.open_thread(incident=incident))
                await self.start_incident_runs(incident)
            elif outcome.kind is IntakeKind.INCIDENT_RESOLVED:
                await self.audit_incident(incident, "incident.resolved", outcome.fingerprint)
                await self.notify(self.e.notifier.update_root(incident=incident, state="resolved"))
                await self._post(incident.id, messages.text("Alert resolved"))
                for run in await self.e.store.list_runs(incident_id=incident.id, statuses=_ACTIVE):
                    self.spawn(self.executor.advance(run.id))
        # After the openings: another fault in the same payload as its incident's first alert
        # finds that incident's run started, and is held behind it rather than run first.
        for incident_id, fingerprints in attached.items():
            await self.faults.joined(incident_id, fingerprints)

    # -- runs -----------------------------------------------------------------------------

    async def start_incident_runs(self, incident: Incident, *, quiet: bool = False) -> list[Run]:
        if incident.cluster not in self.e.clusters:
            if not quiet:  # a retry (recover, tick) must not say it again
                await self._unknown_cluster(incident)
            return []
        runbooks = runbooks_for_alert(self.e.runbooks.values(), incident.labels)
        if not runbooks and not quiet:
            await self._post(
                incident.id,
                messages.text("No runbook matches this alert", f"alertname={incident.alertname}"),
            )
        started = []
        for runbook in runbooks:
            try:
                _plan, run = await self._create_run(
                    runbook,
                    incident=incident,
                    given={},
                    requested_by="alertmanager",
                    cluster=incident.cluster,
                    dry_run=False,
                    quiet=quiet,
                )
            except RunDeferred as exc:
                self.deferred.add(incident.id)
                if not quiet:  # said once; the retries (a run ending, the tick) are silent
                    await self._defer(incident, runbook, exc)
                continue
            except GpubotError as exc:
                if not quiet:  # a retry (recover, tick) must not repeat this every time
                    await self._post(
                        incident.id, messages.text(f"Runbook {runbook.name} not started", str(exc))
                    )
                continue
            if run is not None:
                started.append(run)
        return started

    async def start_command_run(
        self,
        *,
        runbook: str,
        args: Mapping[str, str],
        requested_by: str,
        cluster: str,
        dry_run: bool = False,
    ) -> tuple[Plan, Run | None]:
        """`/gpu run` and `/gpu plan`: InputError for anything wrong with what was typed."""
        rb = self._runbook(runbook)
        return await self._create_run(
            rb,
            incident=None,
            given=args,
            requested_by=requested_by,
            cluster=cluster,
            dry_run=dry_run,
        )

    async def plan(self, *, runbook: str, args: Mapping[str, str], cluster: str) -> Plan:
        return await plan_command(self.e, runbook=runbook, args=args, cluster=cluster)

    async def plan_payload(self, payload: AlertmanagerPayload) -> list[Plan]:
        """Plans for every alert in a payload, without storing anything (`gpubot plan`)."""
        return await plan_alerts(self.e, payload)

    async def _create_run(
        self,
        rb: Runbook,
        *,
        incident: Incident | None,
        given: Mapping[str, str],
        requested_by: str,
        cluster: str,
        dry_run: bool,
        quiet: bool = False,
    ) -> tuple[Plan, Run | None]:
        """`quiet` (a retry by recover or tick): a refusal is neither logged nor counted again."""
        inputs = run_inputs(self.e, rb, incident=incident, given=given, cluster=cluster)
        base, params, target = inputs.base, inputs.params, inputs.target
        dry_run = dry_run or self.dry_run
        now = self.e.clock.now()
        recent: list[Run] = []
        active: list[Run] = []  # the node's active runs of this runbook
        if target and not dry_run:
            # The attempt cap's runs and the node's active runs: one read for both.
            since = now - self.e.policy.attempts.window
            since_window, active = await self.e.store.runs_on_target(
                runbook=rb.name, target=target, since=since, active=_ACTIVE
            )
            recent = [r for r in since_window if not r.dry_run]
            if refusal := check_attempts(
                cap=self.e.policy.attempts, recent_runs=len(recent), runbook=rb.name, node=target
            ):
                if not quiet:
                    self.e.tally.attempt_cap_refused(runbook=rb.name)
                    log.warning(
                        "%s", refusal, extra={"event": "attempt_cap.refused", "runbook": rb.name}
                    )
                raise InputError(refusal)
        if incident is not None and target and not dry_run:
            self._check_node_free(rb, incident=incident, node=target, active=active)
        plan = await plan_run(
            self.e, inputs, incident_id=incident.id if incident else None, run_now=not dry_run
        )
        run = Run(
            id=new_run_id(),
            runbook=rb.name,
            incident_id=incident.id if incident else None,
            cluster=cluster,
            target=target,
            requested_by=requested_by,
            status=RunStatus.RUNNING,
            dry_run=dry_run,
            context={
                **base,
                "params": params,
                "args": dict(given),
                # Which try on this node this is: a runbook's last try can hand the node on.
                "attempt": {"number": len(recent) + 1, "max": self.e.policy.attempts.max_attempts},
                # The target's pool when the run was planned: the thread says when it changes.
                "pool": plan.as_json()["pool"] or {},
            },
            created_at=now,
            updated_at=now,
        )
        steps = [StepState(run_id=run.id, step_id=s.id, position=i) for i, s in enumerate(rb.steps)]
        created_event = self.trail.draft(
            "run.created",
            actor=requested_by,
            incident_id=run.incident_id,
            run_id=run.id,
            target=target,
            args={"params": params},
            reason=f"runbook {rb.name}",
            dry_run=dry_run,
        )
        # The event goes in with the run, in one transaction, and only if the run did.
        view, created = await self.e.store.create_run_read(run, steps, audit=created_event)
        if not created:
            return plan, None  # this incident already has its run: never twice
        stored = view.run
        await self._post(stored.incident_id, messages.plan_message(plan))
        self.spawn(self.executor.advance(stored.id, view=view))
        return plan, stored

    # -- approvals ------------------------------------------------------------------------

    async def vote(
        self,
        *,
        approval_id: str,
        user: str,
        decision: Literal["approve", "deny"],
        user_groups: Sequence[str] = (),
        via: Mapping[str, str] | None = None,
        reason: str = "",
    ) -> VoteOutcome:
        """One click, accepted or refused, always leaves one audit event (approval.vote or
        approval.refused, with the clicker and the reason). Refusals raise ApprovalError with
        the one line to show the clicker. `via` says where a decision not clicked in Slack
        came from (`{"via": "cli", "account": …}`), and `reason` why (a denial's); both go
        into the event's result."""
        extra = {**(via or {}), **({"reason": reason} if reason else {})}
        try:
            request = await self.e.store.get_approval(approval_id)
        except NotFoundError:
            missing = "This approval request does not exist."
            await self.trail.record(
                "approval.refused",
                actor=user,
                result={
                    "decision": decision,
                    "accepted": False,
                    "message": missing,
                    **extra,
                },
                reason=f"approval {approval_id}",
            )
            raise ApprovalError(missing) from None
        run = await self.e.store.get_run(request.run_id)
        outcome = cast_vote(
            request,
            user=user,
            decision=decision,
            now=self.e.clock.now(),
            groups=self.e.policy.groups,
            user_groups=user_groups,
        )
        stored = not outcome.changed or await self.e.store.replace_approval(
            outcome.request, expected_votes=len(request.votes)
        )
        if outcome.accepted and not stored:
            # Another click changed the request after this one read it: refused, and
            # recorded like any refusal, with the status the winner left.
            outcome = VoteOutcome(
                await self.e.store.get_approval(request.id),
                False,
                "Someone else decided this request at the same moment; look again.",
            )
        await self.trail.record(
            "approval.vote" if outcome.accepted else "approval.refused",
            actor=user,
            incident_id=run.incident_id,
            run_id=run.id,
            step=request.step_id,
            target=run.target,
            result={
                "decision": decision,
                "accepted": outcome.accepted,
                "status": outcome.request.status.value,
                "message": outcome.message,
                **extra,
            },
            reason=f"approval {request.id}",
        )
        if stored and outcome.changed and request.status is ApprovalStatus.PENDING:
            approval_decided(self.e.tally, run, outcome.request, now=self.e.clock.now())
        if not outcome.accepted:
            if outcome.request.status is ApprovalStatus.EXPIRED:
                self.spawn(self.executor.advance(run.id))
            raise ApprovalError(outcome.message)
        await self.notify(
            self.e.notifier.approval_decided(
                incident_id=run.incident_id,
                request=outcome.request,
                message=messages.text(outcome.message),
            )
        )
        if outcome.request.status is not ApprovalStatus.PENDING:
            self.spawn(self.executor.advance(run.id))
        return outcome

    async def submit_signed_vote(self, vote: SubmittedVote, message: VoteMessage) -> None:
        """The break-glass CLI's vote, signed by the operator's key: stored for the leader,
        which checks the signature against its own operator keys before it counts it (this
        call decides nothing). ApprovalError when the same signed vote was stored before."""
        await submit(self.e, self.trail, vote, message)

    async def count_signed_votes(self) -> int:
        """Leader: verify and count the signed votes the CLI stored, each once."""
        return await self.counter.count_pending()

    async def cancel(
        self,
        *,
        run_id: str,
        user: str,
        reason: str = "",
        user_groups: Sequence[str] = (),
        via: Mapping[str, str] | None = None,
    ) -> Intervention:
        """Stop a run (ApprovalError with one line when `user` may not); the leader notices
        the event (follow()) and starts nothing more for it."""
        done = await Interventions(self.e).cancel(
            run_id=run_id, user=user, reason=reason, user_groups=user_groups, via=via
        )
        self.spawn(self.executor.advance(run_id))  # here, when this process leads
        return done

    async def resume(
        self,
        *,
        run_id: str,
        user: str,
        user_groups: Sequence[str] = (),
        via: Mapping[str, str] | None = None,
    ) -> Intervention:
        """Let a run that waits for a human go on; the leader advances it (follow())."""
        done = await Interventions(self.e).resume(
            run_id=run_id, user=user, user_groups=user_groups, via=via
        )
        self.spawn(self.executor.advance(run_id))  # here, when this process leads
        return done

    async def object(
        self, *, run_id: str, user: str, member_of: MemberOf | None = None
    ) -> Objection:
        """An owner's "keep it" click in a grace period; ApprovalError says why one is refused."""
        return await record_objection(self.e, run_id=run_id, user=user, member_of=member_of)

    @staticmethod
    def _check_node_free(
        rb: Runbook, *, incident: Incident, node: str, active: Sequence[Run]
    ) -> None:
        """RunDeferred while another incident's run of this runbook is `active` on `node`:
        two runs would drain and release one node each on its own plan. The second fault
        waits for the first run to end, then runs from the node as it is then."""
        for other in active:
            if other.incident_id != incident.id and not other.dry_run:
                raise RunDeferred(
                    f"run {other.id} of {rb.name} is already acting on {node} (incident "
                    f"{other.incident_id}): this fault's run starts when that run ends"
                )

    async def _defer(self, incident: Incident, runbook: Runbook, why: RunDeferred) -> None:
        log.info(
            "%s on %s deferred: %s",
            runbook.name,
            incident.node,
            why,
            extra={"event": "run.deferred", "incident": incident.id},
        )
        await self.trail.record(
            "run.deferred",
            actor="gpubot",
            incident_id=incident.id,
            target=incident.node,
            args={"runbook": runbook.name},
            reason=str(why),
        )
        await self._post(incident.id, messages.text(f"Runbook {runbook.name} waits", str(why)))

    async def _follow_up_opened(self, follow_up: Incident) -> None:
        """A follow-up incident for another fault of a node: its thread, plan and run."""
        await self.notify(self.e.notifier.open_thread(incident=follow_up))
        await self.start_incident_runs(follow_up)

    def _run_ended(self, run: Run) -> None:
        """A run ended here: the faults its incident held get their follow-ups."""
        if run.incident_id is not None:
            self.spawn(self.faults.split_waiting(run.incident_id))

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("background task failed: %s", exc, exc_info=exc)

    async def wait_idle(self, *, events_timeout_s: float = 10.0) -> None:
        """Until the work started here has ended and the node Events it queued are posted
        (those for at most `events_timeout_s`: they are best effort)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        for name, cluster in self.e.clusters.items():
            if left := await cluster.nodes.flush_events(timeout_s=events_timeout_s):
                log.warning("cluster %s: %d node event(s) not posted", name, left)

    def start_up_warnings(self) -> list[str]:
        """Settings that leave the bot unable to act by itself, for the log at start-up."""
        return self.e.policy.blast.warnings()

    async def shutdown(self, *, grace_seconds: float, interrupt_after: float = 5.0) -> None:
        """Stop within `grace_seconds` (SIGTERM): start no step; give steps about to finish
        `interrupt_after` seconds; then interrupt the actions still running, whose steps stay
        RUNNING for the next leader's recovery to check and resume; cancel what is left."""
        self.executor.stop_starting()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_seconds
        if self._tasks:  # at most a third of the grace: the rest is for the interrupted
            settle = min(interrupt_after, grace_seconds / 3)
            await asyncio.wait(list(self._tasks), timeout=settle)
        if self._tasks and (interrupted := self.executor.interrupt()):
            log.warning(
                "shutting down: interrupted %d running step(s); the next leader resumes them",
                interrupted,
            )
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=max(0.0, deadline - loop.time()))
        if self._tasks:  # past the grace period: what is left is cut where it stands
            log.warning("shutting down: cancelling %d task(s) past the grace", len(self._tasks))
            for task in list(self._tasks):
                task.cancel()
            await asyncio.wait(list(self._tasks), timeout=1.0)

    # -- lookups --------------------------------------------------------------------------

    def _runbook(self, name: str) -> Runbook:
        return runbook_named(self.e, name)

    async def _note_conflict(self, outcome: IntakeOutcome) -> None:
        """A re-send whose labels differ from the stored alert's: logged, audited, posted."""
        log.warning(
            "alert %s re-sent with other labels (incident %s): %s",
            outcome.fingerprint,
            outcome.incident_id,
            outcome.detail,
        )
        await self.trail.record(
            "alert.conflict",
            actor="alertmanager",
            incident_id=outcome.incident_id,
            reason=f"fingerprint {outcome.fingerprint}: {outcome.detail}",
        )
        await self._post(
            outcome.incident_id,
            messages.text(
                "An alert was re-sent with other labels; the first ones stand",
                f"fingerprint {outcome.fingerprint}: {outcome.detail}",
            ),
        )

    async def audit_incident(self, incident: Incident, kind: str, fingerprint: str | None) -> None:
        why = f"fingerprint {fingerprint}" if fingerprint else "recorded by recovery"
        await self.trail.record(
            kind,
            actor="alertmanager",
            incident_id=incident.id,
            target=incident.node,
            result={"status": incident.status.value},
            reason=f"alert {incident.alertname} {why}",
        )

    async def _unknown_cluster(self, incident: Incident) -> None:
        """An alert for a cluster the bot does not know (or with no `cluster` label when
        several are configured and none is the default): nothing runs, and the log, the
        metrics, the audit trail and the channel all say so."""
        known = ", ".join(sorted(self.e.clusters))
        named = f"cluster {incident.cluster!r}" if incident.cluster else "no `cluster` label"
        why = (
            f"{named}, and no configured cluster matches (configured: {known}; an alert "
            "without the label goes to `default_cluster`, or to the only cluster)"
        )
        log.warning(
            "alert %s for an unknown cluster: %s; no action taken",
            incident.alertname,
            why,
            extra={"event": "alert.unknown_cluster", "incident": incident.id},
        )
        self.e.tally.alert_unrouted()
        await self.trail.record(
            "alert.unknown_cluster",
            actor="alertmanager",
            incident_id=incident.id,
            target=incident.node,
            args={"cluster": incident.cluster},
            reason=why,
        )
        await self._post(incident.id, messages.text("No action taken: unknown cluster", why))

    async def _post(self, incident_id: str | None, message: Message) -> None:
        await self.notify(self.e.notifier.post(incident_id=incident_id, message=message))

    async def notify(self, call: Coroutine[Any, Any, None]) -> None:
        await best_effort(call, "notify the chat")

"""XID watcher: NVML critical-XID events forwarded to the bot as Alertmanager-shaped alerts."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from gpubot.agent.driver import XidEvent, XidSource
from gpubot.clock import SystemClock
from gpubot.knowledge.xid.recovery import RECOVERY_XID, RecoveryAction
from gpubot.ports import Clock

log = logging.getLogger(__name__)
Send = Callable[[dict[str, Any]], Awaitable[None]]
# Reads a GPU's current recovery action (by index), as NVML's GPU_RECOVERY_ACTION field does.
RecoveryRead = Callable[[int], RecoveryAction | None]


def window_start(at: datetime, window_s: float) -> datetime:
    return datetime.fromtimestamp(at.timestamp() // window_s * window_s, UTC)


def xid_fingerprint(*, cluster: str, node: str, gpu: int, xid: int, window: datetime) -> str:
    """The same for every event of one GPU and XID within one window: the bot opens one incident."""
    key = f"{cluster}/{node}/{gpu}/{xid}/{window.isoformat()}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def xid_alert(
    event: XidEvent,
    *,
    node: str,
    cluster: str,
    window_s: float,
    model: str = "",
    recovery: RecoveryAction | None = None,
) -> dict[str, Any]:
    """An Alertmanager webhook (v4) body for one XID event, labelled as the DCGM exporter does.

    For XID 154, `recovery` (the action the GPU now needs) goes in the label
    `recovery_action`, from which the bot derives its route (gpubot_xid_recovery).
    """
    window = window_start(event.at, window_s)
    labels = {
        "alertname": "GPUXidError",
        "Hostname": node,
        "gpu": str(event.gpu),
        "UUID": event.uuid,
        "xid": str(event.xid),
        "cluster": cluster,
        "severity": "critical",
        "source": "gpubot-agent",
    }
    if model:
        labels["modelName"] = model
    if recovery is not None and event.xid == RECOVERY_XID:
        labels["recovery_action"] = recovery.value
    alert = {
        "status": "firing",
        "labels": labels,
        "annotations": {
            "summary": f"XID {event.xid} on GPU {event.gpu} of {node} (from NVML, via the agent)",
            "description": f"NVML reported critical XID {event.xid} at {event.at.isoformat()}",
        },
        # The window's start: a repeat within the window is the same alert to the bot.
        "startsAt": window.isoformat(),
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "",
        "fingerprint": xid_fingerprint(
            cluster=cluster, node=node, gpu=event.gpu, xid=event.xid, window=window
        ),
    }
    group = {"alertname": "GPUXidError", "cluster": cluster}
    return {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="GPUXidError", cluster="{cluster}", Hostname="{node}"}}',
        "status": "firing",
        "receiver": "gpubot-agent",
        "groupLabels": group,
        "commonLabels": labels,
        "commonAnnotations": alert["annotations"],
        "externalURL": "",
        "truncatedAlerts": 0,
        "alerts": [alert],
    }


class BotEventSender:
    """POSTs alert bodies to the bot's /agent/events with the agent's bearer token.

    `token` is the token itself, or a function read on each send (a projected ServiceAccount
    token: the kubelet rotates the file)."""

    def __init__(
        self,
        *,
        bot_url: str,
        token: str | Callable[[], str],
        timeout_s: float = 10.0,
        attempts: int = 5,
        retry_delay_s: float = 2.0,
        transport: httpx.AsyncBaseTransport | None = None,
        counted: Callable[[str], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`counted` is told each event's outcome: forwarded, refused (4xx) or failed."""
        self._clock: Clock = clock or SystemClock()
        self._url = bot_url.rstrip("/") + "/agent/events"
        self._counted = counted
        self._attempts = attempts
        self._delay = retry_delay_s
        self._token = token if callable(token) else (lambda: token)
        self._client = httpx.AsyncClient(timeout=timeout_s, transport=transport)

    async def __call__(self, body: dict[str, Any]) -> None:
        # Resending is safe: the bot deduplicates by fingerprint and window start.
        labels = body["alerts"][0]["labels"]
        what = f"XID {labels.get('xid')} on GPU {labels.get('gpu')}"
        fields = {"gpu": _int(labels.get("gpu")), "xid": _int(labels.get("xid"))}
        for attempt in range(1, self._attempts + 1):
            try:
                headers = {"authorization": f"Bearer {self._token()}"}
                response = await self._client.post(self._url, json=body, headers=headers)
                if response.status_code < 400:
                    self._outcome("forwarded")
                    log.info(
                        "%s forwarded to the bot",
                        what,
                        extra={"event": "agent.xid_forwarded", "result": "forwarded", **fields},
                    )
                    return
                if response.status_code < 500:
                    self._outcome("refused")
                    reason = _printable(response.text)
                    log.error(
                        "%s refused by the bot: HTTP %d %s",
                        what,
                        response.status_code,
                        reason,
                        extra={
                            "event": "agent.xid_failed",
                            "result": "refused",
                            "status": response.status_code,
                            "reason": reason,
                            **fields,
                        },
                    )
                    return
                reason = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                reason = _printable(f"{type(exc).__name__}: {exc}")
            except OSError as exc:  # the token file, mid-rotation or not mounted yet
                reason = f"cannot read the agent's token: {exc.strerror}"
            log.warning(
                "%s not delivered (attempt %d of %d): %s",
                what,
                attempt,
                self._attempts,
                reason,
                extra={"event": "agent.xid_retry", "reason": reason, **fields},
            )
            if attempt < self._attempts:
                await self._clock.sleep(self._delay * attempt)
        self._outcome("failed")
        log.error(
            "%s dropped after %d attempts: %s",
            what,
            self._attempts,
            reason,
            extra={"event": "agent.xid_failed", "result": "failed", "reason": reason, **fields},
        )

    def _outcome(self, outcome: str) -> None:
        if self._counted is not None:
            self._counted(outcome)

    async def aclose(self) -> None:
        await self._client.aclose()


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _printable(text: str) -> str:
    """A bot's answer as one short line: it is data, not part of this log."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text)[:300] or "-"


class XidWatcher:
    """Waits for XID events (in a thread: NVML's wait blocks) and forwards each once per window."""

    def __init__(
        self,
        source: XidSource,
        *,
        node: str,
        cluster: str,
        send: Send,
        window_s: float = 300.0,
        poll_s: float = 5.0,
        model: str = "",
        recovery: RecoveryRead | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._clock: Clock = clock or SystemClock()
        self._source = source
        self._recovery = recovery
        self._node, self._cluster, self._model = node, cluster, model
        self._send = send
        self._window_s = window_s
        self._poll_s = poll_s
        self._sent: set[str] = set()

    async def run_once(self) -> XidEvent | None:
        event = await asyncio.to_thread(self._source.wait_xid, timeout_s=self._poll_s)
        if event is not None:
            await self.forward(event)
        return event

    async def forward(self, event: XidEvent) -> bool:
        """Send one event unless this GPU/XID was already sent in this window."""
        recovery = None
        if event.xid == RECOVERY_XID and self._recovery is not None:
            recovery = await asyncio.to_thread(self._recovery, event.gpu)
        body = xid_alert(
            event,
            node=self._node,
            cluster=self._cluster,
            window_s=self._window_s,
            model=self._model,
            recovery=recovery,
        )
        fingerprint = body["alerts"][0]["fingerprint"]
        if fingerprint in self._sent:
            return False
        # The sender logs the outcome (forwarded or failed): one line per event at INFO.
        log.debug(
            "XID %d on GPU %d of %s: telling the bot",
            event.xid,
            event.gpu,
            self._node,
            extra={"event": "agent.xid", "gpu": event.gpu, "xid": event.xid},
        )
        await self._send(body)
        self._sent.add(fingerprint)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once()
            except Exception:  # the watcher's edge: log, pause, keep watching
                log.exception("XID watcher failed; retrying")
                await self._clock.sleep(self._poll_s)

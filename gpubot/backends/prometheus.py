"""PrometheusMetrics: the Metrics port over Prometheus's HTTP API (prometheus-api-client).

The client is blocking, so each query runs in a worker thread. Its default retry policy keeps
trying a dead server for about 6 s; this one is deliberate instead: `retries` quick retries on
connection errors and HTTP 502/503/504 (Retry-After ignored), none on a slow answer (asking a
struggling Prometheus again makes it worse), then one clear error. The executor and the
report job decide when to ask again.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubot.domain.fleet.cluster import Sample
from gpubot.errors import GpubotError, MetricsUnavailableError, PermanentStepError

if TYPE_CHECKING:
    import requests

log = logging.getLogger(__name__)

RETRY_STATUSES = (502, 503, 504)
_RETRY_DELAY = 10.0  # what the executor waits before asking an unavailable Prometheus again
_MAX_TEXT = 300  # of Prometheus's error text in a message


class PrometheusMetrics:
    """Instant queries against one Prometheus (or anything with its API: Thanos, Mimir)."""

    def __init__(
        self,
        *,
        url: str,
        timeout_seconds: float = 10.0,
        retries: int = 2,
        backoff_seconds: float = 0.2,
        token_file: Path | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.retries = retries
        self.backoff_seconds = backoff_seconds
        self.token_file = token_file

    async def query(self, *, promql: str) -> list[Sample]:
        return await asyncio.to_thread(self._query, promql)

    def _query(self, promql: str) -> list[Sample]:
        # Imported here: requests and the client cost ~0.2 s, and `gpubot --help` needs neither.
        import requests
        from prometheus_api_client import PrometheusConnect

        with requests.Session() as session:
            session.hooks["response"].append(_refuse_errors)
            prometheus = PrometheusConnect(
                url=self.url,
                headers=self._headers(),
                retry=self._retry_policy(),
                session=session,
                timeout=self.timeout_seconds,
            )
            try:
                # Prometheus's own `timeout` stops the evaluation when we stop waiting for it.
                result = prometheus.custom_query(
                    query=promql, params={"timeout": f"{self.timeout_seconds:g}s"}
                )
            except _HttpFailure as failure:
                raise self._http_error(failure) from None
            except (requests.JSONDecodeError, KeyError, TypeError) as exc:
                raise MetricsUnavailableError(
                    f"Prometheus at {self.url} answered with something that is not its API "
                    f"({type(exc).__name__}); is prometheus_url right?",
                    delay=_RETRY_DELAY,
                ) from exc
            except requests.RequestException as exc:
                raise MetricsUnavailableError(
                    f"Prometheus at {self.url} is unavailable: {self._cause(exc)}",
                    delay=_RETRY_DELAY,
                ) from exc
        return self._samples(result, promql)

    def _retry_policy(self) -> Any:
        from urllib3.util.retry import Retry

        return Retry(
            total=self.retries,
            connect=self.retries,
            status=self.retries,
            read=0,
            other=0,
            backoff_factor=self.backoff_seconds,
            status_forcelist=RETRY_STATUSES,
            respect_retry_after_header=False,
            raise_on_status=False,  # the last answer reaches us, with Prometheus's error text
        )

    def _headers(self) -> dict[str, str] | None:
        if self.token_file is None:
            return None
        try:  # read on every query: mounted tokens are rotated in place
            token = self.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise PermanentStepError(
                f"Prometheus token file {self.token_file}: {exc.strerror or exc}"
            ) from exc
        return {"Authorization": f"Bearer {token}"}

    def _http_error(self, failure: _HttpFailure) -> GpubotError:
        code, text = failure.status, failure.text
        if code in (400, 422):
            return PermanentStepError(f"Prometheus at {self.url} rejected the query: {text}")
        if code in (401, 403):
            return PermanentStepError(
                f"Prometheus at {self.url} refused the credentials (HTTP {code}): {text}; "
                "check prometheus_token_file"
            )
        if code < 500 and code not in (408, 429):
            return PermanentStepError(f"Prometheus at {self.url} answered HTTP {code}: {text}")
        tries = f" after {self.retries + 1} attempts" if code in RETRY_STATUSES else ""
        return MetricsUnavailableError(
            f"Prometheus at {self.url} is unavailable: HTTP {code}{tries}: {text}",
            delay=_RETRY_DELAY,
        )

    def _cause(self, exc: requests.RequestException) -> str:
        from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError

        chain = list(_chain(exc))
        # With read=0 urllib3 reports a read timeout as "max retries", so look down the chain.
        if any(isinstance(e, ReadTimeoutError) for e in chain):
            return f"no answer within {self.timeout_seconds:g}s"
        if any(
            isinstance(e, ConnectTimeoutError) and not isinstance(e, NewConnectionError)
            for e in chain
        ):
            return f"no connection within {self.timeout_seconds:g}s"
        # The innermost OS error says it best (`Connection refused`), not urllib3's repr.
        reason = next(
            (e.strerror for e in reversed(chain) if isinstance(e, OSError) and e.strerror), ""
        )
        tries = f" after {self.retries + 1} attempts" if self.retries else ""
        return f"cannot connect ({reason or type(exc).__name__}){tries}"

    def _samples(self, result: Any, promql: str) -> list[Sample]:
        if _is_scalar(result):  # e.g. `scalar(…)` or a bare number
            result = [{"metric": {}, "value": result}]
        if not isinstance(result, list):
            raise MetricsUnavailableError(
                f"Prometheus at {self.url} answered with something that is not its API "
                f"(result {str(result)[:80]}); is prometheus_url right?",
                delay=_RETRY_DELAY,
            )
        samples: list[Sample] = []
        for item in result:
            try:
                if "values" in item:
                    raise PermanentStepError(
                        f"Prometheus at {self.url}: {promql!r} gives a range vector, "
                        "not an instant vector; wrap it in a *_over_time function"
                    )
                value = float(item["value"][1])  # "NaN", "+Inf" and "-Inf" parse as floats
                labels = _labels(item["metric"])
            except (ValueError, TypeError, KeyError, IndexError) as exc:
                raise PermanentStepError(
                    f"Prometheus at {self.url}: {promql!r} does not give an instant vector "
                    f"of numbers (got {str(item)[:80]})"
                ) from exc
            if math.isnan(value):
                continue  # no number to compare or sum (e.g. 0/0); the series says nothing
            samples.append(Sample(labels=labels, value=value))
        if len(samples) < len(result):
            log.debug("%s: dropped %d NaN samples", promql, len(result) - len(samples))
        return samples


class _HttpFailure(Exception):
    """A non-200 answer (after retries), raised from the session's response hook."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text}")
        self.status, self.text = status, text


def _refuse_errors(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """Turn an error answer into _HttpFailure with its status and Prometheus's own message,
    before the client folds both into one string."""
    if response.status_code == 200:
        return
    try:
        body = response.json()
    except ValueError:
        body = None
    text = str(body.get("error", "")) if isinstance(body, dict) else ""
    text = " ".join((text or response.text[:_MAX_TEXT] or response.reason or "").split())
    if len(text) > _MAX_TEXT:  # an execution error may list every clashing series
        text = text[: _MAX_TEXT - 1] + "…"
    raise _HttpFailure(response.status_code, text)


def _is_scalar(result: Any) -> bool:
    return (
        isinstance(result, list)
        and len(result) == 2
        and isinstance(result[0], int | float)
        and isinstance(result[1], str)
    )


def _labels(metric: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in metric.items()}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what caused it, outermost first (urllib3 keeps the cause in `reason`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        reason = getattr(current, "reason", None)
        current = (
            reason
            if isinstance(reason, BaseException)
            else (current.__cause__ or current.__context__)
        )

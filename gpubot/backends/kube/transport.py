"""The requests a storm sends for every alert, as JSON in and bytes out: node PATCH and GET,
pod LIST, Event POST.

Two ways to send them, the same contract: a non-2xx answer raises ApiException (status,
body, headers, as the generated client raises it), an API server that cannot be reached or
does not answer within the timeout raises Unreachable.

- AioTransport: one aiohttp session on an event loop of its own, on a thread this transport
  owns. The generated client spends about twice the CPU per request (its parameter checks and
  serialisation, then urllib3 in a pool thread per request); here a request is one prepared
  JSON body and aiohttp's parser, and callers on any event loop await it. `close()` stops it.
- ClientTransport: the generated client's own `call_api` in a thread pool, for what
  AioTransport does not reproduce (a proxy, socket options).

Both read from the client's Configuration at each request what can change (the server's
address and the bearer token, which the loaders' refresh hook renews). An ApiClient that
defines `observe(method, url, status)` is told of each request AioTransport sends, as its
`call_api` sees the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import threading
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError
from yarl import URL

JSON = "application/json"
log = logging.getLogger(__name__)


class Unreachable(Exception):
    """The API server could not be reached, or did not answer in time."""


def segment(name: str) -> str:
    """One path segment for an object's name: percent-encoded whole, so no name (an alert's
    label) adds a segment or a query to the request; '', '.' and '..' are refused."""
    if name in ("", ".", ".."):
        raise ValueError(f"not an object name: {name!r}")
    return quote(name, safe="")


def _headers(api: client.ApiClient, content_type: str | None) -> dict[str, str]:
    cfg = api.configuration
    headers = {**api.default_headers, "Accept": JSON}
    if content_type:
        headers["Content-Type"] = content_type
    for setting in cfg.auth_settings().values():  # the token, refreshed by the loader's hook
        if setting.get("in") == "header" and setting.get("value"):
            headers[str(setting["key"])] = str(setting["value"])
    return headers


def _query(query: Mapping[str, str | None] | None) -> str:
    pairs = {k: v for k, v in (query or {}).items() if v is not None}
    return f"?{urlencode(pairs)}" if pairs else ""


class _IoLoop:
    """An event loop on a daemon thread of its own, and the aiohttp session made on it. The
    thread closes the session, cancels what is left and closes the loop when the loop is
    stopped, so stopping never blocks and nothing is left open."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.session: aiohttp.ClientSession | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Ask the loop to stop (from any thread; nothing if it is already closed)."""
        with contextlib.suppress(RuntimeError):  # closed already
            self.loop.call_soon_threadsafe(self.loop.stop)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            if self.session is not None:
                self.loop.run_until_complete(self.session.close())
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()


class AioTransport:
    """The hot requests over aiohttp, on a loop and thread of their own (started on first
    use). `close()` stops them; an adapter dropped without it stops them when collected."""

    def __init__(self, api: client.ApiClient, *, connections: int, timeout: float) -> None:
        self._api = api
        self._connections = connections
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._observe: Callable[[str, str, int], None] | None = getattr(api, "observe", None)
        self._ssl = ssl_context(api.configuration)
        self._lock = threading.Lock()
        self._io: _IoLoop | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @staticmethod
    def serves(cfg: client.Configuration) -> bool:
        """Whether these settings are ones AioTransport reproduces: no proxy, no socket
        options, no other host name to check than the server's (tls_server_name is)."""
        return (
            not cfg.proxy
            and cfg.socket_options is None
            and not getattr(cfg, "keep_alive", False)
            and cfg.assert_hostname in (None, True, False)
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | None] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> bytes:
        io = self._io_loop()
        future = asyncio.run_coroutine_threadsafe(
            self._send(io, method, path, query, body, content_type), io.loop
        )
        return await asyncio.wrap_future(future)

    @property
    def thread(self) -> threading.Thread | None:
        """The loop's thread while it runs (None before the first request and after close)."""
        return self._io.thread if self._io is not None else None

    def close(self) -> None:
        """Stop the loop (its thread closes the session) and wait a few seconds for it."""
        with self._lock:
            io, finalizer, self._io, self._finalizer = self._io, self._finalizer, None, None
        if io is None:
            return
        if finalizer is not None:
            finalizer.detach()
        io.stop()
        io.thread.join(timeout=5)
        if io.thread.is_alive():
            log.warning("the API server's HTTP loop did not stop within 5 s")

    def _io_loop(self) -> _IoLoop:
        with self._lock:
            if self._io is None:
                self._io = _IoLoop("kube-http")
                # Dropped without close(): stop the loop then (its thread closes the session).
                self._finalizer = weakref.finalize(self, self._io.stop)
            return self._io

    async def _send(
        self,
        io: _IoLoop,
        method: str,
        path: str,
        query: Mapping[str, str | None] | None,
        body: Any,
        content_type: str | None,
    ) -> bytes:
        if io.session is None:  # made on the loop's own thread, where it is used
            connector = aiohttp.TCPConnector(limit=self._connections, ssl=self._ssl)
            io.session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        session = io.session
        cfg = self._api.configuration
        url = f"{cfg.host}{path}{_query(query)}"
        data = None if body is None else json.dumps(body).encode()
        headers = _headers(self._api, (content_type or JSON) if data is not None else None)
        status = 0
        try:
            async with session.request(
                method,
                URL(url, encoded=True),
                data=data,
                headers=headers,
                server_hostname=cfg.tls_server_name or None,
            ) as response:
                status = response.status
                raw = await response.read()
                if not 200 <= status <= 299:
                    exc = ApiException(status=status, reason=response.reason)
                    exc.body = raw.decode("utf-8", "replace")
                    exc.headers = response.headers.copy()
                    raise exc
                return raw
        except TimeoutError as exc:
            raise Unreachable(f"timed out after {self._timeout.total:g} s") from exc
        except aiohttp.ClientError as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc
        finally:
            if self._observe is not None:
                self._observe(method, url, status)


class ClientTransport:
    """The same requests through the generated client's `call_api`, in `pool`."""

    def __init__(self, api: client.ApiClient, *, pool: Executor, timeout: float) -> None:
        self._api = api
        self._pool = pool
        self._timeout = timeout

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | None] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, self._send, method, path, query, body, content_type
        )

    def close(self) -> None:
        """Nothing of its own: the pool and the client belong to the adapter."""

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | None] | None,
        body: Any,
        content_type: str | None,
    ) -> bytes:
        url = f"{self._api.configuration.host}{path}{_query(query)}"
        headers = _headers(self._api, (content_type or JSON) if body is not None else None)
        try:  # the client's REST layer writes the JSON body itself
            response = self._api.call_api(
                method, url, header_params=headers, body=body, _request_timeout=self._timeout
            )
            raw = bytes(response.read())  # type: ignore[no-untyped-call]
        except HTTPError as exc:
            raise Unreachable(f"{type(exc).__name__}: {exc}") from exc
        if not 200 <= response.status <= 299:
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return raw


def ssl_context(cfg: client.Configuration) -> ssl.SSLContext | bool:
    """The TLS settings the generated client would use: its CA (a file or inline data), the
    client certificate and key, verify_ssl and assert_hostname; True for a plain-HTTP server
    (not used)."""
    if not str(cfg.host).startswith("https://"):
        return True
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None, cadata=cfg.ca_cert_data)
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cfg.assert_hostname is False:
        context.check_hostname = False
    return context

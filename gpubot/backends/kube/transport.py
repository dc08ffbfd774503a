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
import json
import logging
import ssl
import threading
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


class AioTransport:
    """The hot requests over aiohttp, on a loop and thread of their own (started on first use)."""

    def __init__(self, api: client.ApiClient, *, connections: int, timeout: float) -> None:
        self._api = api
        self._connections = connections
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._observe: Callable[[str, str, int], None] | None = getattr(api, "observe", None)
        self._ssl = ssl_context(api.configuration)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: aiohttp.ClientSession | None = None

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
        future = asyncio.run_coroutine_threadsafe(
            self._send(method, path, query, body, content_type), self._io_loop()
        )
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Close the session and stop the loop's thread (waits at most a few seconds)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close_session(), loop).result(timeout=5)
        except Exception as exc:  # closing: the thread is stopped whatever happened
            log.warning("closing the API server's HTTP session: %s", exc)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()

    def _io_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="kube-http", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | None] | None,
        body: Any,
        content_type: str | None,
    ) -> bytes:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._connections, ssl=self._ssl)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        cfg = self._api.configuration
        url = f"{cfg.host}{path}{_query(query)}"
        data = None if body is None else json.dumps(body).encode()
        headers = _headers(self._api, (content_type or JSON) if data is not None else None)
        status = 0
        try:
            async with self._session.request(
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

"""Connecting to NATS: one set of flags for every command, with ``NATS_*`` env fallbacks.

Auth: user/password, token, nkey seed file, creds file, TLS (CA, client cert and key).
Every connection gets an ``ErrorRoute`` as its error callback, so a handler can be put in
front of it after connecting (nats-py takes the callback only at ``connect``).
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats
import nats.errors
import structlog
from nats.aio.client import Client as NATS

from worker.failures import RuntimeFailure
from worker.logs import add_secrets, redact, redact_url
from worker.retry import CONNECT, RetryStopped, retry

log = structlog.get_logger("worker.transport.connection")


@dataclass(frozen=True)
class NatsOptions:
    url: str | None = None  # None: the caller decides (serve starts an embedded server)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkey_seed: str | None = None  # path to an nkey seed file
    creds: str | None = None  # path to a .creds file
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    name: str = "sessionquery"
    # Connection attempts at start before giving up (0: forever). Once connected, the
    # client reconnects forever.
    connect_attempts: int = 10

    def with_url(self, url: str) -> NatsOptions:
        from dataclasses import replace

        return replace(self, url=url)


async def connect(options: NatsOptions, **extra: Any) -> NATS:
    """Connect with reconnects forever: a worker outlives NATS restarts."""
    if options.url is None:
        raise ValueError("no NATS URL: pass --nats-url or set NATS_URL")
    register_secrets(options)
    kwargs = _connect_kwargs(options)
    kwargs.setdefault("error_cb", _log_error)
    kwargs.update(extra)
    return await open_connection(**kwargs)


def _connect_kwargs(options: NatsOptions) -> dict[str, Any]:
    assert options.url is not None
    kwargs: dict[str, Any] = {
        "servers": [u.strip() for u in options.url.split(",")],
        "name": options.name,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.5,
        "connect_timeout": 5,
    }
    if options.user:
        kwargs["user"] = options.user
        kwargs["password"] = options.password
    if options.token:
        kwargs["token"] = options.token
    if options.nkey_seed:
        kwargs["nkeys_seed"] = options.nkey_seed
    if options.creds:
        kwargs["user_credentials"] = options.creds
    if options.tls_ca or options.tls_cert:
        context = ssl.create_default_context(cafile=options.tls_ca)
        if options.tls_cert:
            context.load_cert_chain(options.tls_cert, options.tls_key)
        kwargs["tls"] = context
    return kwargs


class ConnectFailed(RuntimeFailure):
    """No connection after the allowed attempts; the message is one redacted line."""


def register_secrets(options: NatsOptions) -> None:
    """Every credential the options carry, for the log redaction (file contents too)."""
    add_secrets(options.password, options.token)
    for path in (options.nkey_seed, options.creds):
        if path:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            add_secrets(*(line.strip() for line in text.splitlines() if len(line.strip()) > 16))


def describe_error(exc: BaseException | None) -> str:
    """The server's or the socket's reason in a few words, credentials redacted."""
    if exc is None:
        return "no reason given"
    if isinstance(exc, nats.errors.AuthorizationError) or "authorization violation" in (
        str(exc).lower()
    ):
        return "Authorization Violation (the server refused the credentials)"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is nats-server running there?)"
    if isinstance(exc, (TimeoutError, nats.errors.TimeoutError)):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc) or type(exc).__name__
    return redact(" ".join(text.split()))[:300]


async def connect_reporting(
    options: NatsOptions,
    *,
    attempts: int | None = None,
    stop: asyncio.Event | None = None,
    name: str | None = None,
    **extra: Any,
) -> NATS:
    """Connect at start: one log line per failed attempt naming the URL (credentials
    redacted) and the reason, backoff with jitter, ``ConnectFailed`` after ``attempts``
    (``options.connect_attempts`` by default; 0: forever) or when ``stop`` is set. Once
    connected the client reconnects forever, as ``connect`` does."""
    if options.url is None:
        raise ValueError("no NATS URL: pass --nats-url or set NATS_URL")
    register_secrets(options)
    limit = options.connect_attempts if attempts is None else attempts
    where = redact_url(options.url)
    failed: list[str] = []  # the line of each failed attempt

    async def attempt() -> NATS:
        errors: list[BaseException] = []
        try:
            return await _connect_once(options, errors, name=name, **extra)
        except Exception as exc:
            reason = describe_error(errors[-1] if errors else exc)
            failed.append(f"cannot connect to NATS at {where}: {reason}")
            raise

    def retrying(exc: Exception, failures: int, wait: float) -> None:
        of = f"attempt {failures} of {limit}" if limit else f"attempt {failures}"
        log.warning(f"{failed[-1]} ({of}); retrying in {wait:.1f} s")

    try:
        return await retry(
            CONNECT.at_most(limit or None), attempt, on=lambda exc: True, stop=stop, log=retrying
        )
    except RetryStopped:
        raise ConnectFailed(f"{failed[-1]} (stopped while retrying)") from None
    except Exception:
        of = f"attempt {len(failed)} of {limit}" if limit else f"attempt {len(failed)}"
        log.error(f"{failed[-1]} ({of}); giving up")
        raise ConnectFailed(f"{failed[-1]} (after {len(failed)} attempts)") from None


async def _connect_once(
    options: NatsOptions, errors: list[BaseException], *, name: str | None, **extra: Any
) -> NATS:
    connected = False

    async def on_error(exc: Exception) -> None:
        # While connecting: kept for the one line per attempt. Connected: logged, one line.
        if connected:
            await _log_error(exc)
        else:
            errors.append(exc)

    kwargs = _connect_kwargs(options)
    kwargs.update(
        # One try per server per attempt: connect_reporting does the waits and the reporting.
        allow_reconnect=False,
        max_reconnect_attempts=1,
        reconnect_time_wait=0.05,
        error_cb=on_error,
    )
    if name:
        kwargs["name"] = name
    kwargs.update(extra)
    nc = await open_connection(**kwargs)
    connected = True
    nc.options["allow_reconnect"] = True
    nc.options["max_reconnect_attempts"] = extra.get("max_reconnect_attempts", -1)
    nc.options["reconnect_time_wait"] = extra.get("reconnect_time_wait", 0.5)
    return nc


async def _log_error(exc: Exception) -> None:
    # nats-py's default logs a traceback per failure; one line with the reason is enough.
    log.warning("nats connection error", reason=describe_error(exc))


ErrorHandler = Callable[[Exception], Awaitable[None]]


class ErrorRoute:
    """A connection's error callback whose ``handler`` can change after connecting."""

    def __init__(self, handler: ErrorHandler) -> None:
        self.handler = handler

    async def dispatch(self, exc: Exception) -> None:
        await self.handler(exc)


_routes: weakref.WeakKeyDictionary[NATS, ErrorRoute] = weakref.WeakKeyDictionary()


def error_route(nc: NATS) -> ErrorRoute | None:
    """The route ``open_connection`` gave ``nc`` (None: connected some other way)."""
    return _routes.get(nc)


async def open_connection(
    servers: str | list[str] = "nats://127.0.0.1:4222", **kwargs: Any
) -> NATS:
    """``nats.connect`` with an ``ErrorRoute`` (in front of ``error_cb``), then a flush.

    Without the flush, the first request on a fresh connection is sometimes answered "no
    responders" although the responder's subscription is in place (about 1 in 20 first
    requests against nats-server 2.15 on loopback; none in 200 after a flush).
    """
    route = ErrorRoute(kwargs.pop("error_cb", None) or _log_error)
    nc = await nats.connect(servers, error_cb=route.dispatch, **kwargs)
    _routes[nc] = route
    await nc.flush()
    return nc

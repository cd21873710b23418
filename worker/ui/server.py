"""The UI's HTTP server: the standard library's ``ThreadingHTTPServer`` in front of one NATS
connection on an event loop of its own.

Protection, like a notebook server's: a random token printed at start. ``/?token=T`` sets
an HttpOnly, SameSite=Strict cookie and redirects to the page without it; any other request
without that cookie gets 401 and a page asking for the token. Requests whose Host header is
not the bound address or loopback are refused (DNS rebinding), and every page is sent with
a Content-Security-Policy that allows no script, no frames and only our stylesheet, so
agent text that reached the markup still could not run. The server binds 127.0.0.1 unless
told otherwise.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs, urlencode, urlsplit

import structlog
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from worker.transport.connection import error_route
from worker.ui import pages
from worker.ui.client import OperatorClient, OperatorError
from worker.ui.routes import ROUTES
from worker.ui.watch import PROBE_VERB, WorkerWatch

log = structlog.get_logger("worker.ui.server")

COOKIE: Final = "sessionquery_ui"
CSP: Final = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self';"
    " frame-ancestors 'none'; base-uri 'none'"
)


@dataclass(frozen=True, slots=True)
class Answer:
    status: HTTPStatus
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def _stylesheet() -> bytes:
    return resources.files("worker.ui").joinpath("ui.css").read_bytes()


class UiApp:
    """What the handler threads share: the token, the allowed hosts, the client."""

    def __init__(self, client: OperatorClient, token: str, hosts: frozenset[str]) -> None:
        self.client = client
        self.token = token
        self.hosts = hosts
        self.css = _stylesheet()

    def authorized(self, cookie_header: str | None) -> bool:
        if not cookie_header:
            return False
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(cookie_header)
        except Exception:
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value, self.token)

    def answer(self, path: str, query: str, host: str | None, cookie: str | None) -> Answer:
        if host is None or host.lower() not in self.hosts:
            return _html(HTTPStatus.FORBIDDEN, pages.error_page("This host name is not served."))
        q = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        if path == "/static/ui.css":  # the login page's too: nothing in it is private
            return Answer(HTTPStatus.OK, self.css, "text/css; charset=utf-8")
        if "token" in q:
            return self._login(path, q)
        if not self.authorized(cookie):
            return _html(HTTPStatus.UNAUTHORIZED, pages.login_page())
        route = ROUTES.get(path)
        if route is None:
            return _html(HTTPStatus.NOT_FOUND, pages.error_page("No such page."))
        try:
            return _html(HTTPStatus.OK, route(self.client, q))
        except OperatorError as exc:
            if exc.shown is not None:
                return _html(exc.status, exc.shown)
            unavailable = exc.status == HTTPStatus.SERVICE_UNAVAILABLE
            return _html(exc.status, pages.error_page(exc.message, unavailable=unavailable))
        except Exception:
            log.exception("ui page failed", path=path)
            return _html(HTTPStatus.INTERNAL_SERVER_ERROR, pages.error_page("The page failed."))

    def _login(self, path: str, q: dict[str, str]) -> Answer:
        given = q.pop("token")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return _html(HTTPStatus.UNAUTHORIZED, pages.login_page())
        # The token leaves the address bar (and the history) at once.
        target = path + (f"?{urlencode(q)}" if q else "")
        cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
        return Answer(
            HTTPStatus.SEE_OTHER, b"", headers=(("Location", target), ("Set-Cookie", cookie))
        )


def _html(status: HTTPStatus, text: str) -> Answer:
    return Answer(status, text.encode())


class _Handler(BaseHTTPRequestHandler):
    server_version = "sessionquery-ui"
    sys_version = ""
    app: UiApp  # set on the subclass the server makes

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        answer = self.app.answer(
            parts.path, parts.query, self.headers.get("Host"), self.headers.get("Cookie")
        )
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for name, value in answer.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Not logged: paths carry workspaces, queries and, on login, the token."""


class UiServer:
    """The HTTP server and its NATS loop; ``start`` returns it serving, ``stop`` ends both."""

    def __init__(self, httpd: ThreadingHTTPServer, loop: asyncio.AbstractEventLoop,
                 nc: NATS, token: str, probing: asyncio.Event) -> None:  # fmt: skip
        self._httpd = httpd
        self._loop = loop
        self._nc = nc
        self._probing = probing  # set: the probe stops
        self.token = token
        host, port = httpd.server_address[:2]
        self.port = int(port)
        self.base_url = f"http://{_url_host(str(host))}:{self.port}"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="sessionquery-ui"
        )

    @property
    def login_url(self) -> str:
        return f"{self.base_url}/?token={self.token}"

    @classmethod
    def start(
        cls,
        connect: Callable[[], Any],
        subjects: Subjects,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        app: type[UiApp] = UiApp,
    ) -> UiServer:
        """Serve on ``host:port`` (0: any free port); ``connect`` is a coroutine function
        that opens the NATS connection (run on the UI's own loop). ``app``: the pages
        (bench.ui_paint adds its floor page to them)."""
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="sessionquery-ui-nats", daemon=True).start()
        try:
            # As long as ``connect`` tries (its ``--connect-attempts``), however long.
            nc = asyncio.run_coroutine_threadsafe(connect(), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            raise
        watch = WorkerWatch()
        route = error_route(nc)
        if route is not None:  # one line per change, not one per reconnect attempt
            route.handler = watch.on_error
        probing = asyncio.Event()
        probe = subjects.operator(PROBE_VERB)
        asyncio.run_coroutine_threadsafe(watch.probe(nc, probe, probing), loop)
        token = token or secrets.token_urlsafe(24)
        httpd = ThreadingHTTPServer((host, port), _Handler)
        httpd.daemon_threads = True
        bound = int(httpd.server_address[1])
        names = {host, "127.0.0.1", "localhost", "[::1]"}
        hosts = frozenset(f"{_url_host(n)}:{bound}".lower() for n in names)
        shared = app(OperatorClient(nc, loop, subjects, watch), token, hosts)
        httpd.RequestHandlerClass = type("Handler", (_Handler,), {"app": shared})
        server = cls(httpd, loop, nc, token, probing)
        server._thread.start()
        return server

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)
        self._loop.call_soon_threadsafe(self._probing.set)
        done = asyncio.run_coroutine_threadsafe(self._nc.close(), self._loop)
        try:
            done.result(10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host

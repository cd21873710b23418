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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs, urlencode, urlsplit

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from contracts.subjects import Subjects
from worker.failures import RuntimeFailure
from worker.ui import pages

log = structlog.get_logger("worker.ui.server")

COOKIE: Final = "sessionquery_ui"
REQUEST_TIMEOUT_S: Final = 35.0  # the worker's own deadline is 30 s
SESSIONS_PAGE: Final = 50
TIMELINE_PAGE: Final = 50
CHUNK_CHARS: Final = 65_536
CSP: Final = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self';"
    " frame-ancestors 'none'; base-uri 'none'"
)
SORT_KEYS: Final = frozenset({"updated", "created", "events", "title"})
NO_WORKER: Final = (
    "No worker answers the operator subjects: is `sessionquery serve` running, on this NATS"
    " server and subject prefix, with credentials that may call them?"
)


class OperatorError(RuntimeFailure):
    """A reply that is not ok, or no reply; ``status`` is the HTTP status to show it with."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_ERROR_STATUS: Final = {
    "SESSION_QUERY_NOT_FOUND": HTTPStatus.NOT_FOUND,
    "SESSION_QUERY_INVALID_ARGUMENTS": HTTPStatus.BAD_REQUEST,
    "SESSION_QUERY_TIMEOUT": HTTPStatus.GATEWAY_TIMEOUT,
}


class OperatorClient:
    """Operator requests over one NATS connection, asked from the HTTP threads."""

    def __init__(self, nc: NATS, loop: asyncio.AbstractEventLoop, subjects: Subjects) -> None:
        self._nc = nc
        self._loop = loop
        self._subjects = subjects

    def ask(self, verb: str, **arguments: Any) -> dict[str, Any]:
        body = orjson.dumps({"arguments": {k: v for k, v in arguments.items() if v is not None}})
        future = asyncio.run_coroutine_threadsafe(self._request(verb, body), self._loop)
        return future.result(REQUEST_TIMEOUT_S + 1)

    async def _request(self, verb: str, body: bytes) -> dict[str, Any]:
        try:
            msg = await self._nc.request(
                self._subjects.operator(verb), body, timeout=REQUEST_TIMEOUT_S
            )
        except NoRespondersError:
            raise OperatorError(HTTPStatus.SERVICE_UNAVAILABLE, NO_WORKER) from None
        except NatsTimeout:
            raise OperatorError(HTTPStatus.GATEWAY_TIMEOUT, NO_WORKER) from None
        reply = orjson.loads(msg.data) if msg.data else {}
        if reply.get("status") == "ok":
            result: dict[str, Any] = reply["result"]
            return result
        error = reply.get("error") or {}
        status = _ERROR_STATUS.get(error.get("code", ""), HTTPStatus.BAD_GATEWAY)
        raise OperatorError(status, str(error.get("message") or "The worker refused."))


@dataclass(frozen=True, slots=True)
class Answer:
    status: HTTPStatus
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


Route = Callable[[OperatorClient, Mapping[str, str]], str]


def _workspace(q: Mapping[str, str]) -> str | None:
    if q.get("nocwd") == "1":
        return None
    if "ws" not in q:
        raise OperatorError(HTTPStatus.BAD_REQUEST, "Which workspace? (ws= is missing)")
    return q["ws"]


def _int(q: Mapping[str, str], key: str, default: int, low: int = 0) -> int:
    try:
        return max(low, int(q.get(key, default)))
    except ValueError:
        raise OperatorError(HTTPStatus.BAD_REQUEST, f"{key} must be a number") from None


def _day_ms(value: str | None, *, end: bool) -> int | None:
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise OperatorError(HTTPStatus.BAD_REQUEST, "dates are YYYY-MM-DD") from None
    return int(day.timestamp() * 1000) + (86_399_999 if end else 0)


def _required(q: Mapping[str, str], key: str) -> str:
    if not q.get(key):
        raise OperatorError(HTTPStatus.BAD_REQUEST, f"{key}= is missing")
    return q[key]


def workspaces_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    return pages.workspaces(client.ask("workspaces"))


def sessions_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace = _workspace(q)
    sort = q.get("sort", "updated") if q.get("sort") in SORT_KEYS else "updated"
    args: dict[str, Any] = {
        "sort": sort,
        "desc": 0 if q.get("desc") == "0" else 1,
        "limit": SESSIONS_PAGE,
        "availability": q.get("availability") or None,
        "title": q.get("title") or None,
        "roots": 1 if q.get("roots") == "1" else None,
        "updated_from": q.get("updated_from") or None,
        "updated_to": q.get("updated_to") or None,
    }
    found = client.ask(
        "sessions",
        workspace=workspace,
        sort=sort,
        descending=args["desc"] == 1,
        offset=_int(q, "offset", 0),
        limit=SESSIONS_PAGE,
        availability=[args["availability"]] if args["availability"] else None,
        title_contains=args["title"],
        roots_only=bool(args["roots"]),
        updated_from_ms=_day_ms(args["updated_from"], end=False),
        updated_to_ms=_day_ms(args["updated_to"], end=True),
    )
    return pages.sessions(workspace, {k: v for k, v in args.items() if v is not None}, found)


def search_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, query = _workspace(q), q.get("q", "").strip()
    session_id = q.get("session") or None
    if not query:
        raise OperatorError(HTTPStatus.BAD_REQUEST, "Type something to search for.")
    filters = {k: q[k] for k in ("surface", "type") if q.get(k)}
    found = client.ask(
        "search",
        workspace=workspace,
        query=query,
        session_id=session_id,
        cursor=q.get("cursor"),
        surfaces=[filters["surface"]] if "surface" in filters else None,
        types=[filters["type"]] if "type" in filters else None,
    )
    return pages.search(workspace, query, session_id, found, filters)


def session_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, sid = _workspace(q), _required(q, "id")
    # ``at``: an event to show (a search hit): its page starts a few events before it.
    start = _int(q, "from", max(1, _int(q, "at", 1, 1) - 5), 1)
    found = client.ask(
        "timeline", workspace=workspace, session_id=sid, from_seq=start, limit=TIMELINE_PAGE
    )
    return pages.timeline(workspace, found, start, TIMELINE_PAGE)


def event_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, sid = _workspace(q), _required(q, "id")
    seq = _int(q, "seq", 1, 1)
    chunk = client.ask(
        "event", workspace=workspace, session_id=sid, seq=seq, offset=_int(q, "offset", 0),
        size=CHUNK_CHARS,
    )  # fmt: skip
    relations = client.ask("relations", workspace=workspace, session_id=sid, seq=seq)
    return pages.event(workspace, sid, seq, chunk, relations)


def lineage_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    workspace, sid = _workspace(q), _required(q, "id")
    return pages.lineage(workspace, client.ask("lineage", workspace=workspace, session_id=sid))


def operations_page(client: OperatorClient, q: Mapping[str, str]) -> str:
    return pages.operations(client.ask("operations"))


ROUTES: Final[dict[str, Route]] = {
    "/": workspaces_page,
    "/sessions": sessions_page,
    "/search": search_page,
    "/session": session_page,
    "/event": event_page,
    "/lineage": lineage_page,
    "/ops": operations_page,
}


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
            return _html(exc.status, pages.error_page(exc.message))
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
                 nc: NATS, token: str) -> None:  # fmt: skip
        self._httpd = httpd
        self._loop = loop
        self._nc = nc
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
            nc = asyncio.run_coroutine_threadsafe(connect(), loop).result(60)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            raise
        token = token or secrets.token_urlsafe(24)
        httpd = ThreadingHTTPServer((host, port), _Handler)
        httpd.daemon_threads = True
        bound = int(httpd.server_address[1])
        names = {host, "127.0.0.1", "localhost", "[::1]"}
        hosts = frozenset(f"{_url_host(n)}:{bound}".lower() for n in names)
        shared = app(OperatorClient(nc, loop, subjects), token, hosts)
        httpd.RequestHandlerClass = type("Handler", (_Handler,), {"app": shared})
        server = cls(httpd, loop, nc, token)
        server._thread.start()
        return server

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)
        done = asyncio.run_coroutine_threadsafe(self._nc.close(), self._loop)
        try:
            done.result(10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host

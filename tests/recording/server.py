"""A scripted model server on 127.0.0.1: dispatches each request by method and path to the
dialects' routes, which answer from a :class:`~tests.recording.script.Script`.

Every request and reply goes to a JSONL log (for debugging a recording; never committed), and
unknown paths answer 404 and are logged too, so it shows what an agent asks for.
"""

from __future__ import annotations

import json
import re
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.recording.dialects import HttpReply, Route, all_routes, error_reply
from tests.recording.script import Script

# The one key the server accepts: the agents are only ever given this.
FAKE_KEY = "sk-sq-recording-fake-key-0000"


def presented_key(headers: Any, query: str) -> str | None:
    """The credential a request carries, in whichever header its dialect uses."""
    for name in ("x-api-key", "x-goog-api-key", "api-key"):
        if headers.get(name):
            return str(headers[name])
    auth = headers.get("authorization")
    if auth:
        return str(auth).split(" ", 1)[-1].strip()
    keys = parse_qs(query).get("key")
    return keys[0] if keys else None


class ScriptedModelServer:
    def __init__(
        self,
        script: Script,
        *,
        routes: list[Route] | None = None,
        log_path: Path | None = None,
        key: str = FAKE_KEY,
    ) -> None:
        self.script = script
        self.routes = all_routes() if routes is None else routes
        self.key = key
        self.log_path = log_path
        self.requests = 0
        self.unknown: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def log(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.requests += 1
            if self.log_path is not None:
                with self.log_path.open("a") as f:
                    f.write(json.dumps(record, default=str) + "\n")

    def answer(
        self, method: str, target: str, headers: Any, raw: bytes
    ) -> tuple[HttpReply, dict[str, Any]]:
        """The reply to one request and its log record."""
        parts = urlsplit(target)
        path, query = parts.path, parts.query
        full = f"{path}?{query}" if query else path
        record: dict[str, Any] = {"time": time.time(), "method": method, "path": full}
        try:
            body: dict[str, Any] = json.loads(raw) if raw.strip() else {}
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        record["body"] = body
        for route in self.routes:
            if route.method != method:
                continue
            match = re.fullmatch(route.path, path) or re.fullmatch(route.path, full)
            if match is None:
                continue
            if not route.public and presented_key(headers, query) != self.key:
                return error_reply(401, "invalid api key"), record
            try:
                return route.handler(match, body, self.script), record
            except Exception:
                record["error"] = traceback.format_exc()
                return error_reply(500, "scripted server failed"), record
        with self._lock:
            self.unknown.append(f"{method} {full}")
        return error_reply(404, f"no route for {method} {path}"), record

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the JSONL log has it

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                reply, record = server.answer(self.command, self.path, self.headers, raw)
                record["status"] = reply.status
                record["reply"] = b"".join(reply.chunks).decode(errors="replace")
                server.log(record)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.streamed:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    data = b"".join(reply.chunks)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler

"""Drive ``opencode serve`` through its v2 session API, as a recipe step (run with the system
``python3``, standard library only): ``python3 opencode_v2_serve.py BIN PORT PROMPT...``.

Starts the server in the task folder, creates one session (``POST /api/session``) and posts
each prompt to ``/api/session/:id/prompt``, waiting for the turn to end before the next.
A prompt written ``interrupt:TEXT`` is interrupted (``/interrupt``) a few seconds after it
is posted, while its command runs. The server is stopped at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

INTERRUPT = "interrupt:"


def request(base: str, method: str, path: str, body: object = None, timeout: float = 240) -> object:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as response:
        text = response.read().decode()
    print(method, path, response.status, text[:300], flush=True)
    return json.loads(text) if text.strip() else None


def settle(base: str, session_id: str) -> None:
    """Wait until the session's turn is over: 1.18.33 answers ``/wait`` with 503 (not
    available yet), so poll ``/api/session/active`` until it no longer lists the session."""
    time.sleep(3)
    for _ in range(300):
        active = request(base, "GET", "/api/session/active")
        if session_id not in json.dumps(active):
            return
        time.sleep(1)
    raise SystemExit(f"{session_id} still active")


def main(argv: list[str]) -> int:
    binary, port, *prompts = argv
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "serve", "--port", port, "--hostname", "127.0.0.1"])
    try:
        for _ in range(120):
            try:
                request(base, "GET", "/api/health", timeout=90)
                break
            except OSError:  # not listening yet, or its first answer slow
                time.sleep(0.5)
        # The catalogue (the configured provider) loads after the first request.
        request(base, "GET", "/api/provider")
        time.sleep(3)
        created = request(base, "POST", "/api/session", {})
        assert isinstance(created, dict)
        session = created.get("data", created)
        session_id = session["id"] if isinstance(session, dict) else None
        assert isinstance(session_id, str), created
        for text in prompts:
            interrupt = text.startswith(INTERRUPT)
            text = text.removeprefix(INTERRUPT)
            request(base, "POST", f"/api/session/{session_id}/prompt", {"prompt": {"text": text}})
            if interrupt:
                time.sleep(6)
                request(base, "POST", f"/api/session/{session_id}/interrupt")
            settle(base, session_id)
        time.sleep(2)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

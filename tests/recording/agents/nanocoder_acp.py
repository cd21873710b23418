"""A minimal Agent Client Protocol client for recording Nanocoder (``nanocoder --acp``): the
way an editor drives it, and the only non-interactive way to go on with a saved session,
cancel a turn or rename a session. Standard library only: it runs as a recipe step, inside
the namespace, with the system's Python.

``python3 nanocoder_acp.py NANOCODER_ARGV_JSON ACTIONS_JSON``: starts the agent, initializes,
loads the newest saved session of the current folder (``sessions.json`` in
``$NANOCODER_DATA_DIR/sessions``), then runs the actions in order: ``["prompt", text]``,
``["cancel", text, seconds]`` (a prompt cancelled after that long), ``["image", text,
png path]``, ``["rename", title]``. Permission requests are allowed.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class Client:
    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0
        self.replies: dict[int, dict[str, Any]] = {}
        self.ready = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "method" in message and "id" in message:  # the agent asks the client
                self._answer(message)
            elif "id" in message:
                with self.ready:
                    self.replies[message["id"]] = message
                    self.ready.notify_all()
            else:
                print(f"acp: {json.dumps(message)[:300]}", file=sys.stderr, flush=True)
        with self.ready:
            self.ready.notify_all()

    def _answer(self, request: dict[str, Any]) -> None:
        if request["method"] == "session/request_permission":
            options = request["params"].get("options", [])
            allow = next((o for o in options if str(o.get("kind", "")).startswith("allow")), None)
            chosen = allow or (options[0] if options else {"optionId": "allow"})
            outcome = {"outcome": "selected", "optionId": chosen["optionId"]}
            self._send({"id": request["id"], "result": {"outcome": outcome}})
            return
        error = {"code": -32601, "message": f"not supported: {request['method']}"}
        self._send({"id": request["id"], "error": error})

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, request_id: int, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.ready:
            while request_id not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise SystemExit(f"acp: no reply to request {request_id}")
                self.ready.wait(left)
        reply = self.replies.pop(request_id)
        print(f"acp: reply {json.dumps(reply)[:300]}", file=sys.stderr, flush=True)
        return reply

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.wait(self.request(method, params))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            return self.process.wait(timeout=30)


def newest_session(cwd: str) -> str:
    index = Path(os.environ["NANOCODER_DATA_DIR"]) / "sessions" / "sessions.json"
    sessions = [s for s in json.loads(index.read_text()) if s["workingDirectory"] == cwd]
    newest: str = max(sessions, key=lambda s: s["lastAccessedAt"])["id"]
    return newest


def main(argv: list[str]) -> int:
    agent, actions = json.loads(argv[0]), json.loads(argv[1])
    cwd = os.getcwd()
    client = Client(agent)
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    client.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    session = newest_session(cwd)
    client.call("session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []})
    for action in actions:
        kind = action[0]
        if kind == "prompt":
            text = [{"type": "text", "text": action[1]}]
            client.call("session/prompt", {"sessionId": session, "prompt": text})
        elif kind == "cancel":
            text = [{"type": "text", "text": action[1]}]
            pending = client.request("session/prompt", {"sessionId": session, "prompt": text})
            time.sleep(float(action[2]))
            client.notify("session/cancel", {"sessionId": session})
            client.wait(pending)
        elif kind == "image":
            data = base64.b64encode(Path(action[2]).read_bytes()).decode()
            blocks = [
                {"type": "image", "mimeType": "image/png", "data": data},
                {"type": "text", "text": action[1]},
            ]
            client.call("session/prompt", {"sessionId": session, "prompt": blocks})
        elif kind == "rename":
            client.call("renameSession", {"sessionId": session, "title": action[1]})
    return client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

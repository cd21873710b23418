"""``sessionquery serve`` as a real child process, for the index-versus-stream fault tests.

Only the pid started here is ever signalled. stdout lines are collected as they come;
stderr (JSON log lines) goes to a file the test reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import orjson

REPO: Final = Path(__file__).resolve().parents[2]
# Every process a test started, so one that a failed assertion left running is killed after
# the test (``kill_left_running``) rather than outliving the run.
_STARTED: Final[list[asyncio.subprocess.Process]] = []
SERVING: Final = "serving the five session query tools"


@dataclass
class Serve:
    """One ``python -m worker.cli serve`` process."""

    args: Sequence[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = REPO
    process: asyncio.subprocess.Process | None = field(default=None, init=False)
    lines: list[str] = field(default_factory=list, init=False)
    _reader: asyncio.Task[None] | None = field(default=None, init=False)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self) -> Serve:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "SESSIONQUERY_LOG_FORMAT": "json",
            **self.env,
        }
        env.pop("NATS_URL", None)
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "worker.cli",
            "serve",
            *self.args,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.log.open("ab"),
            env=env,
            cwd=self.cwd,
        )
        _STARTED.append(self.process)
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.lines.append(line.decode(errors="replace").rstrip("\n"))

    async def wait_line(self, text: str, within: float = 60.0) -> str:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for line in self.lines:
                if text in line:
                    return line
            if self.process is not None and self.process.returncode is not None:
                break
            await asyncio.sleep(0.05)
        raise AssertionError(
            f"no line with {text!r} (exit {self.returncode()}); stdout: {self.lines[-10:]};"
            f" log tail: {self.log_text()[-2000:]}"
        )

    async def serving(self, within: float = 60.0) -> Serve:
        await self.wait_line(SERVING, within)
        return self

    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    async def wait_exit(self, within: float) -> int:
        assert self.process is not None
        code = await asyncio.wait_for(self.process.wait(), within)
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)
        return code

    def signal(self, sig: signal.Signals = signal.SIGTERM) -> None:
        if self.process is not None and self.process.returncode is None:
            os.kill(self.process.pid, sig)

    async def stop(self, within: float = 30.0) -> int:
        """SIGTERM, then SIGKILL if it does not exit ``within``; the exit code."""
        if self.process is None:
            return 0
        self.signal(signal.SIGTERM)
        try:
            return await self.wait_exit(within)
        except TimeoutError:
            self.signal(signal.SIGKILL)
            return await self.wait_exit(10)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_events(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for line in self.log_text().splitlines():
            with contextlib.suppress(orjson.JSONDecodeError):
                value = orjson.loads(line)
                if isinstance(value, dict):
                    out.append(value)
        return out


def kill_left_running() -> None:
    """SIGKILL each started process still running (its writer child dies with it)."""
    while _STARTED:
        process = _STARTED.pop()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)


def serve_args(url: str, db: Path, *extra: str) -> list[str]:
    return ["--nats-url", url, "--db", str(db), "--log-format", "json", *extra]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill 0: read its state.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def children_of(pid: int) -> list[int]:
    """The pids of ``pid``'s direct children (Linux)."""
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def children_running(pid: int, needle: bytes) -> list[int]:
    """``pid``'s direct children whose command line holds ``needle`` (Linux)."""
    found = []
    for child in children_of(pid):
        try:
            if needle in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue  # exited meanwhile
    return found

"""``sessionquery ui`` as a process: it honours ``--connect-attempts``, names ``--port 0``
when its port is taken, and stops on SIGINT even where a shell script's background job
starts with SIGINT ignored (against the suite's real nats-server)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

CLI = [sys.executable, "-m", "worker.cli", "ui"]
LIMIT_S = 60  # a hang guard, not an assertion on speed


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "SESSIONQUERY_"))}
    env["NATS_URL"] = url
    return env


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def test_a_taken_port_names_port_0(nats_url: str, taken_port: int) -> None:
    done = subprocess.run(
        [*CLI, "--port", str(taken_port)],
        env=_env(nats_url), capture_output=True, text=True, timeout=LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"127.0.0.1:{taken_port} is already in use" in done.stderr
    assert "--port 0" in done.stderr


def test_connect_attempts_are_honoured() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = int(probe.getsockname()[1])
    done = subprocess.run(
        [*CLI, "--port", "0", "--connect-attempts", "2"],
        env=_env(f"nats://127.0.0.1:{closed}"), capture_output=True, text=True, timeout=LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 2
    assert "(after 2 attempts)" in done.stderr, done.stderr


def test_sigint_stops_it_when_started_with_sigint_ignored(nats_url: str) -> None:
    def as_a_background_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # what sh does to `cmd &`

    process = subprocess.Popen(
        [*CLI, "--port", "0"], env=_env(nats_url), stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, preexec_fn=as_a_background_job,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen: list[str] = []  # log lines may come first (no worker answers this test's server)
        while not seen or "sessionquery ui: open" not in seen[-1]:
            seen.append(process.stdout.readline())
            assert seen[-1], seen
        process.send_signal(signal.SIGINT)
        assert process.wait(LIMIT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

"""Stopping and connecting as an operator meets them (issue 11): SIGTERM while every
ingest batch fails, a second signal, wrong or missing credentials, an unreachable server.
Real nats-server, real ``serve`` and ``import`` processes. No log line may carry a secret."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from tests._harness import until
from tests.reliability._faults import connected, publish, run_cli, session_events
from tests.reliability._harness import wait_indexed
from tests.reliability._serve import Serve, children_of, pid_alive, serve_args
from worker.transport.embedded_server import EmbeddedNatsServer

STOP_BOUND_S = 15.0  # the default shutdown timeout
SLACK_S = 5.0  # process start-up and interpreter exit
# How long a step whose duration is the machine's (a process starting, a retry logged, a
# child exiting after its parent) may take: a hang guard, not a bound under test.
SETTLE_S = 60.0
BOOM = "CREATE TRIGGER boom BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'boom'); END"


async def _failing_ingestion(url: str, tmp_path: Path, *extra: str) -> Serve:
    """A worker whose every batch fails (and is retried) once the trigger is in place."""
    db = tmp_path / "index.sqlite"
    async with connected(url) as nc:
        last = await publish(nc, ["s-a"], 3)
        worker = await (await Serve(serve_args(url, db), tmp_path / "w0.log").start()).serving()
        await wait_indexed(db, last)
        assert await worker.stop() == 0
        conn = sqlite3.connect(db)
        conn.execute(BOOM)
        conn.close()
        worker = await (
            await Serve(serve_args(url, db, *extra), tmp_path / "w1.log").start()
        ).serving()
        await publish(nc, ["s-b"], 5)
        with contextlib.suppress(TimeoutError):
            await until(lambda: "ingest batch failed; retrying" in worker.log_text(), SETTLE_S)
        assert "ingest batch failed; retrying" in worker.log_text(), "ingestion did not fail"
        return worker


async def test_sigterm_while_every_batch_fails_exits_within_the_bound(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path
) -> None:
    worker = await _failing_ingestion(own_nats_server.url, tmp_path)
    # Stalled: status shows the lag in events and in seconds (the oldest unapplied event).
    await asyncio.sleep(1.0)
    _code, out, _ = await run_cli(
        "status", "--db", str(tmp_path / "index.sqlite"), "--nats-url", own_nats_server.url,
        "--json",
    )  # fmt: skip
    report = orjson.loads(out)
    assert report["lag_events"] == 5 and report["lag_seconds"] >= 1.0, report
    started = time.monotonic()
    worker.signal(signal.SIGTERM)
    code = await worker.wait_exit(STOP_BOUND_S + SLACK_S)
    took = time.monotonic() - started
    assert code == 0 and took < STOP_BOUND_S + SLACK_S, (code, took)
    assert "worker stopped" in worker.log_text()


async def test_the_shutdown_timeout_is_a_hard_bound(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path
) -> None:
    """Below the 5 s that a failing batch is given to drain, the timeout ends the process."""
    worker = await _failing_ingestion(
        own_nats_server.url, tmp_path, "--shutdown-timeout-ms", "1500"
    )
    children = children_of(worker.pid)
    assert children, "the writer child"
    started = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert await worker.wait_exit(10) == 1
    assert time.monotonic() - started < 1.5 + SLACK_S
    assert "stop took longer than the shutdown timeout; exiting now" in worker.log_text()
    with contextlib.suppress(TimeoutError):  # the writer child dies with it (PDEATHSIG)
        await until(lambda: not any(pid_alive(c) for c in children), SETTLE_S)
    assert not any(pid_alive(c) for c in children)


async def test_a_second_signal_exits_at_once(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path
) -> None:
    worker = await _failing_ingestion(own_nats_server.url, tmp_path)
    worker.signal(signal.SIGTERM)
    await worker.wait_line("stopping gracefully", SETTLE_S)
    started = time.monotonic()
    worker.signal(signal.SIGINT)
    code = await worker.wait_exit(5)
    assert code == 130 and time.monotonic() - started < 5
    assert any("SIGINT again: exiting now" in line for line in worker.lines)


def _secret_server(tmp_path: Path, *auth: str) -> EmbeddedNatsServer:
    server = EmbeddedNatsServer(store_dir=tmp_path / "nats-auth", extra_args=auth)
    server.start()
    return server


@pytest.mark.parametrize(
    ("server_auth", "client_args", "secret"),
    [
        (
            ("--user", "sq", "--pass", "GoodPass-1"),
            ("--nats-user", "sq", "--nats-password", "WrongPass-7Q"),
            "WrongPass-7Q",
        ),
        (("--auth", "GoodToken-1"), ("--nats-token", "WrongToken-9Z"), "WrongToken-9Z"),
        (("--user", "sq", "--pass", "GoodPass-1"), (), "GoodPass-1"),
    ],
    ids=["wrong-password", "wrong-token", "no-credentials"],
)
async def test_wrong_credentials_one_line_per_attempt_then_exit_and_no_secret_logged(
    tmp_path: Path, server_auth: tuple[str, ...], client_args: tuple[str, ...], secret: str
) -> None:
    server = _secret_server(tmp_path, *server_auth)
    try:
        args = [
            *serve_args(server.url, tmp_path / "index.sqlite", "--connect-attempts", "3"),
            *client_args,
        ]
        worker = await Serve(args, tmp_path / "w.log").start()
        assert await worker.wait_exit(30) == 1
        text = worker.log_text() + "\n".join(worker.lines)
        attempts = [line for line in text.splitlines() if "cannot connect to NATS at" in line]
        # Three attempts logged, plus the final one-line message on stderr.
        assert len(attempts) == 4, attempts
        assert all(server.url in line for line in attempts), attempts
        assert all("Authorization Violation" in line for line in attempts), attempts
        assert "attempt 3 of 3" in text and "Traceback" not in text
        for line in text.splitlines():
            assert secret not in line, line
    finally:
        server.stop()


async def test_credentials_in_the_url_are_redacted_and_import_says_authorization_failed(
    tmp_path: Path,
) -> None:
    server = _secret_server(tmp_path, "--user", "sq", "--pass", "GoodPass-1")
    try:
        url = server.url.replace("nats://", "nats://sq:UrlSecret-42@")
        worker = await Serve(
            serve_args(url, tmp_path / "index.sqlite", "--connect-attempts", "2"),
            tmp_path / "w.log",
        ).start()
        assert await worker.wait_exit(30) == 1
        text = worker.log_text()
        assert "UrlSecret-42" not in text and "nats://sq:***@127.0.0.1" in text, text
        assert "Authorization Violation" in text
        events = tmp_path / "events.jsonl"
        events.write_bytes(b"\n".join(session_events("s-a", 2)) + b"\n")
        code, out, err = await run_cli(
            "import", str(events), "--nats-url", server.url,
            "--nats-user", "sq", "--nats-password", "Wrong-Imp0rt",
        )  # fmt: skip
        assert code == 2 and "Authorization Violation" in err, err
        assert "Wrong-Imp0rt" not in out + err
    finally:
        server.stop()


async def test_an_unreachable_server_retries_until_sigterm_when_asked_to_try_forever(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    url = f"nats://127.0.0.1:{port}"
    worker = await Serve(
        serve_args(url, tmp_path / "index.sqlite", "--connect-attempts", "0"), tmp_path / "w.log"
    ).start()
    # Two attempts: the process's start-up, then one retry wait (0.5 s at most).
    with contextlib.suppress(TimeoutError):
        await until(lambda: worker.log_text().count("cannot connect to NATS") >= 2, SETTLE_S)
    text = worker.log_text()
    assert "connection refused" in text and url in text and "(attempt 2); retrying" in text, text
    worker.signal(signal.SIGTERM)
    assert await worker.wait_exit(STOP_BOUND_S + SLACK_S) == 0

"""The CLI as a user runs it: ``serve`` (embedded default), ``call``, ``manifest``; and logs.

One ``serve --sample-corpus`` subprocess with its own embedded nats-server is shared by the
module; the last test stops it with SIGTERM and checks it exits 0 and took its server down.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import structlog
from nats.aio.client import Client as NATS

from contracts.client import SessionQueryClient
from contracts.envelope import AgentIdentity, Execution
from contracts.partitions import DEFAULT_PARTITION_COUNT, partition_of_cwd
from contracts.subjects import TOOL_NAMES, Subjects
from worker.commands.sample_corpus import DEMO_CALLER, PAY_ROOT, PAYMENTS, WEB_CHILD, WEB_ROOT
from worker.logs import configure_logging, request_context
from worker.transport.connection import open_connection

CLI = [sys.executable, "-m", "worker.cli"]
STEP = "8"  # the demo caller's current step/start
SPILL_THRESHOLD = 2048
START_LIMIT_S = 60  # a hang guard, not an assertion on speed


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    home: Path
    stdout_lines: list[str]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "SESSIONQUERY_"))}
    env["SESSIONQUERY_LOG_FORMAT"] = "json"
    return env


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("serve")
    process = subprocess.Popen(
        [
            *CLI, "serve", "--sample-corpus", "--embedded-port", "-1",
            "--home", str(home / "state"), "--db", str(home / "index.sqlite"),
            "--spill-threshold-bytes", str(SPILL_THRESHOLD), "--spill-preview-bytes", "512",
        ],
        cwd=home, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    lines: list[str] = []
    url = ""
    deadline = time.monotonic() + START_LIMIT_S
    assert process.stdout is not None
    try:
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if match := re.search(r"listening on (nats://\S+);", line):
                url = match.group(1)
            if line.startswith("serving the five"):
                break
        assert url and lines[-1].startswith("serving"), "".join(lines)
        yield Served(process=process, url=url, home=home, stdout_lines=lines)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _cli(*args: str, url: str | None) -> subprocess.CompletedProcess[str]:
    env = _env()
    if url:
        env["NATS_URL"] = url
    return subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=START_LIMIT_S
    )


def test_serve_prints_url_and_a_ready_to_paste_example(served: Served) -> None:
    text = "".join(served.stdout_lines)
    assert served.url.startswith("nats://127.0.0.1:")
    example = next(line.strip() for line in served.stdout_lines if "sessionquery call" in line)
    assert f"--session {DEMO_CALLER}" in example and served.url in example
    assert "sample corpus: 66 events published" in text


def test_call_prints_rendered_text(served: Served) -> None:
    done = _cli(
        "call", "session_search", "--session", DEMO_CALLER, "--step-start-seq", STEP,
        '{"query": "flaky refund test"}', url=served.url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert PAY_ROOT in done.stdout
    assert "Fix flaky refund idempotency test" in done.stdout
    assert WEB_ROOT not in done.stdout and WEB_CHILD not in done.stdout


def test_call_routes_by_the_callers_cwd(served: Served) -> None:
    """--cwd sends the request to the caller's workspace partition: the same text as the
    unpartitioned subject; another directory's partition does not know the caller."""
    query = '{"query": "flaky refund test"}'
    plain = _cli("call", "session_search", "--session", DEMO_CALLER, query, url=served.url)
    routed = _cli(
        "call", "session_search", "--session", DEMO_CALLER, "--cwd", PAYMENTS, query,
        url=served.url,
    )  # fmt: skip
    assert routed.returncode == plain.returncode == 0, routed.stderr
    assert routed.stdout == plain.stdout and PAY_ROOT in routed.stdout
    elsewhere = next(
        f"/elsewhere/{n}"
        for n in range(100)
        if partition_of_cwd(f"/elsewhere/{n}", DEFAULT_PARTITION_COUNT)
        != partition_of_cwd(PAYMENTS, DEFAULT_PARTITION_COUNT)
    )
    wrong = _cli(
        "call", "session_search", "--session", DEMO_CALLER, "--cwd", elsewhere, query,
        url=served.url,
    )  # fmt: skip
    assert wrong.returncode == 1 and wrong.stderr.startswith("SESSION_QUERY_NO_IDENTITY: ")


def test_call_error_reply_prints_code_and_exits_1(served: Served) -> None:
    foreign = _cli(
        "call", "session_event_read", "--session", DEMO_CALLER,
        json.dumps({"session_id": WEB_ROOT, "seq": 1}), url=served.url,
    )  # fmt: skip
    assert foreign.returncode == 1
    assert foreign.stderr.startswith("SESSION_QUERY_NOT_FOUND: ")
    assert foreign.stdout == ""
    missing = _cli(
        "call", "session_event_read", "--session", DEMO_CALLER,
        json.dumps({"session_id": "s-not-there", "seq": 1}), url=served.url,
    )  # fmt: skip
    assert missing.stderr.replace("s-not-there", "<id>") == foreign.stderr.replace(WEB_ROOT, "<id>")
    invalid = _cli(
        "call", "session_event_read", "--session", DEMO_CALLER,
        '{"session_id": "s-x", "seq": 1, "workspace": "/etc"}', url=served.url,
    )  # fmt: skip
    assert invalid.returncode == 1
    assert invalid.stderr.startswith("SESSION_QUERY_INVALID_ARGUMENTS: ")
    # --deadline-ms is absolute (epoch ms): one long past is answered TIMEOUT, not run.
    late = _cli(
        "call", "session_trace", "--session", DEMO_CALLER, "--deadline-ms", "1000000000000", "{}",
        url=served.url,
    )  # fmt: skip
    assert late.returncode == 1 and late.stderr.startswith("SESSION_QUERY_TIMEOUT: ")


def test_call_usage_errors_are_precise(served: Served) -> None:
    no_url = _cli("call", "session_trace", "--session", DEMO_CALLER, "{}", url=None)
    assert no_url.returncode == 2
    assert "no NATS URL: pass --nats-url or set NATS_URL" in no_url.stderr
    bad_json = _cli("call", "session_trace", "--session", DEMO_CALLER, "{oops", url=served.url)
    assert bad_json.returncode == 2
    assert "not valid JSON" in bad_json.stderr
    not_object = _cli("call", "session_trace", "--session", DEMO_CALLER, "[1]", url=served.url)
    assert not_object.returncode == 2
    no_manifest_url = _cli("manifest", url=None)
    assert no_manifest_url.returncode == 2 and "no NATS URL" in no_manifest_url.stderr


def test_manifest_prints_the_five_tools(served: Served) -> None:
    done = _cli("manifest", url=served.url)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)
    assert [tool["name"] for tool in manifest["tools"]] == list(TOOL_NAMES)
    assert manifest["prompt_section"]


def test_spilled_result_is_fetched_and_printed_whole(served: Served) -> None:
    args = json.dumps({"session_id": PAY_ROOT, "seq": 7, "before": 6, "after": 8})

    async def via_client() -> tuple[bool, str, int]:
        nc = await open_connection(served.url)
        try:
            client = SessionQueryClient(nc, Subjects())
            execution = Execution(agent=AgentIdentity(session_id=DEMO_CALLER))
            reply = await client.call("session_event_read", orjson.loads(args), execution)
            assert reply.status == "ok" and reply.content is not None, reply.error
            assert reply.spill is not None
            whole = (await client.fetch_spilled(reply.spill)).decode()
            return len(reply.content.encode()) <= 1024, whole, reply.spill.size
        finally:
            await nc.close()

    preview_bounded, whole, size = asyncio.run(via_client())
    assert preview_bounded
    assert size > SPILL_THRESHOLD and len(whole.encode()) == size
    done = _cli("call", "session_event_read", "--session", DEMO_CALLER, args, url=served.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == whole if whole.endswith("\n") else done.stdout == whole + "\n"
    assert "1 failed, 13 passed in 0.41s" in done.stdout


def test_serve_answers_srv_ping_and_exits_0_on_sigterm(served: Served) -> None:
    async def ping() -> dict[str, object]:
        nc = await open_connection(served.url)
        try:
            reply = await nc.request("$SRV.PING.session-query", b"", timeout=5)
            return dict(orjson.loads(reply.data))
        finally:
            await nc.close()

    pong = asyncio.run(ping())
    assert pong["name"] == "session-query"
    assert pong["type"] == "io.nats.micro.v1.ping_response"

    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(START_LIMIT_S) == 0
    assert served.process.stdout is not None
    tail = served.process.stdout.read()
    assert "SIGTERM: stopping gracefully" in tail

    async def server_gone() -> bool:
        try:
            nc = await open_connection(
                served.url, allow_reconnect=False, max_reconnect_attempts=1, connect_timeout=2
            )
        except Exception:
            return True
        await nc.close()
        return False

    assert asyncio.run(server_gone()), "the embedded nats-server outlived serve"


def test_log_lines_of_a_request_carry_its_id_and_tool() -> None:
    stream = io.StringIO()
    configure_logging(json=True, level="info", stream=stream)
    try:
        log = structlog.get_logger("test")
        with request_context(request_id="r-log-1", tool="session_trace"):
            log.info("started", extra_field=1)
            logging.getLogger("nats.something").warning("from the standard library")
            log.info("odd value", value=object())  # must still render
        log.info("outside")
        log.debug("filtered out")
    finally:
        configure_logging(json=True, level="warning", stream=sys.stderr)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["event"] for line in lines] == [
        "started",
        "from the standard library",
        "odd value",
        "outside",
    ]
    for line in lines[:3]:
        assert line["request_id"] == "r-log-1" and line["tool"] == "session_trace"
        assert "timestamp" in line and "level" in line
    assert "request_id" not in lines[3]


def test_serve_config_flags_win_over_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from worker.commands.serve import add_arguments, config_from_args

    monkeypatch.setenv("SESSIONQUERY_READERS", "3")
    monkeypatch.setenv("SESSIONQUERY_PARALLEL_POOL_SIZE", "5")
    monkeypatch.setenv("SESSIONQUERY_SEARCH_TIMEOUT_MS", "7000")
    monkeypatch.delenv("SESSIONQUERY_DB_PATH", raising=False)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--readers", "6", "--max-results", "40", "--subject-prefix", "sqx", "--home", "/tmp/h"]
    )
    config = config_from_args(args)
    assert config.readers == 6  # flag over env
    assert config.parallel_pool_size == 5  # env over default
    assert config.tools.search_timeout_ms == 7000 and config.tools.max_search_results == 40
    assert config.subjects.prefix == "sqx" and config.subjects.events_stream == "SESSIONS"
    assert config.db_path == Path("/tmp/h/index.sqlite")
    explicit = config_from_args(parser.parse_args(["--db", "/tmp/x.sqlite"]))
    assert explicit.db_path == Path("/tmp/x.sqlite")


async def test_publishing_the_sample_corpus_twice_adds_nothing(
    nc: NATS, subjects: Subjects
) -> None:
    from worker.commands.sample_corpus import sample_events
    from worker.commands.sample_publish import publish_sample_corpus

    first = await publish_sample_corpus(nc, subjects)
    assert first == (len(sample_events()), len(sample_events()))
    assert await publish_sample_corpus(nc, subjects) == (0, first[1])
    info = await nc.jetstream().stream_info(subjects.events_stream)
    assert info.state.messages == len(sample_events())


def test_a_json_log_line_always_renders_and_stays_ascii() -> None:
    from worker.logs import render_json

    hard: list[dict[object, object]] = [
        {"event": "ok", "ms": 0.25, "spilled": False},
        {"event": "non-ascii", "value": "café ☕"},
        {"event": "surrogate", "value": "\ud800"},  # orjson refuses it
        {"event": "big", "value": 2**70},  # past 64 bits
        {"event": "object", "value": object(), 3: "int key"},
    ]
    for event_dict in hard:
        line = render_json(None, "info", dict(event_dict))  # type: ignore[arg-type]
        assert line.isascii() and "\n" not in line
        parsed = json.loads(line)
        assert parsed["event"] == event_dict["event"]
        assert set(parsed) == {str(key) for key in event_dict}
    assert json.loads(render_json(None, "info", {"v": "café"}))["v"] == "café"

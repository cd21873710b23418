"""``sessionquery demo``: the whole path once, with nothing to set up.

An embedded nats-server in a temporary directory, the sample corpus published to it, a
worker started in this process, and each of the five tools called once through the
requester client as a live session of the first workspace; each rendered result is printed
under a header line. Everything started here is stopped before it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import orjson

from contracts.client import SessionQueryClient
from contracts.envelope import AgentIdentity, Execution
from contracts.subjects import Subjects
from worker.commands import sample_corpus as sample
from worker.transport.connection import open_connection

INGEST_WAIT_S: Final = 30.0

# One call per tool, as the demo caller (the live payments grandchild) would make them.
CALLS: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    ("session_search", {"query": "flaky refund test"}),
    ("session_event_search", {"session_id": sample.PAY_ROOT, "query": "duplicate ledger entry"}),
    ("session_trace", {"session_id": sample.PAY_CHILD}),
    ("session_event_trace", {"session_id": sample.PAY_ROOT, "seq": 10}),
    ("session_event_read", {"session_id": sample.PAY_ROOT, "seq": 7, "before": 1, "after": 1}),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-dir",
        type=Path,
        default=None,
        help="use this directory (kept afterwards) instead of a temporary one",
    )


def run(args: argparse.Namespace) -> int:
    from worker.logs import configure_logging

    # Warnings only: the tools' output is the point here.
    configure_logging(json=False, level="warning")
    if args.keep_dir is not None:
        args.keep_dir.mkdir(parents=True, exist_ok=True)
        return asyncio.run(demo(args.keep_dir))
    with tempfile.TemporaryDirectory(prefix="sessionquery-demo-") as tmp:
        return asyncio.run(demo(Path(tmp)))


async def demo(home: Path, *, out: Any = None) -> int:
    """Run the demo under ``home``; returns 0 when every tool answered ``ok``."""
    from worker.commands.sample_publish import current_step_start, publish_sample_corpus
    from worker.config import WorkerConfig
    from worker.transport.embedded_server import EmbeddedNatsServer
    from worker.worker import Worker

    out = out or sys.stdout
    server = EmbeddedNatsServer(store_dir=home / "nats", new_session=True)
    await asyncio.to_thread(server.start)
    try:
        nc = await open_connection(server.url, connect_timeout=5, max_reconnect_attempts=3)
        try:
            subjects = Subjects()
            count, last_seq = await publish_sample_corpus(nc, subjects)
            _print(out, f"embedded nats-server at {server.url}; {count} sample events published")
            config = WorkerConfig(db_path=home / "index.sqlite", subjects=subjects)
            worker = await Worker.start(nc, config)
            try:
                await _wait_indexed(worker, last_seq)
                return await _call_each_tool(
                    SessionQueryClient(nc, subjects), out, current_step_start
                )
            finally:
                await worker.stop()
        finally:
            await nc.drain()
    finally:
        await asyncio.to_thread(server.stop)


async def _wait_indexed(worker: Any, last_seq: int) -> None:
    deadline = time.monotonic() + INGEST_WAIT_S
    while (await worker.indexed_through() or 0) < last_seq:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sample corpus was not indexed within {INGEST_WAIT_S:.0f} s")
        await asyncio.sleep(0.05)


async def _call_each_tool(client: SessionQueryClient, out: Any, step_of: Any) -> int:
    execution = Execution(
        agent=AgentIdentity(session_id=sample.DEMO_CALLER),
        step_start_seq=step_of(sample.DEMO_CALLER),
    )
    _print(out, f"caller: {sample.DEMO_CALLER} in {sample.PAYMENTS}")
    failures = 0
    for tool, arguments in CALLS:
        _print(out, "")
        _print(out, f"=== {tool} {orjson.dumps(arguments).decode()} ===")
        reply = await client.call(tool, arguments, execution)
        if reply.status != "ok" or reply.error is not None:
            failures += 1
            error = reply.error
            _print(out, f"{error.code.value}: {error.message}" if error else "no content")
            continue
        text = reply.content or ""
        if reply.spill is not None:
            text = (await client.fetch_spilled(reply.spill)).decode("utf-8", "replace")
        _print(out, text.rstrip("\n"))
    return 1 if failures else 0


def _print(out: Any, line: str) -> None:
    out.write(line + "\n")
    out.flush()

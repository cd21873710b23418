"""A real worker (index, ingestion, the five tools) in its own process, for fault tests.

``python -m tests.reliability._worker_main '<json spec>'`` with ``url`` (comma-separated
seeds), ``subjects`` (the Subjects fields), ``db`` and optional ``config`` (WorkerConfig
integer overrides). Connects like ``sessionquery serve`` does (reconnect forever), logs
JSON lines to stderr (the parent points it at a file; level from SESSIONQUERY_LOG_LEVEL),
prints ``READY <pid>`` once serving, and stops gracefully on SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
from nats.aio.msg import Msg

from contracts.subjects import Subjects
from worker.logs import configure_logging
from worker.runtime.config import WorkerConfig
from worker.runtime.connection import NatsOptions, connect
from worker.runtime.search_lane import REQUEST_ID_HEADER
from worker.runtime.worker import Worker


async def main(spec: dict[str, Any]) -> int:
    configure_logging(json=True)
    nc = await connect(NatsOptions(url=spec["url"], name=f"reliability-{spec.get('label', 'w')}"))
    config = WorkerConfig(
        db_path=Path(spec["db"]),
        subjects=Subjects(**spec["subjects"]),
        **spec.get("config", {}),
    )
    worker = await Worker.start(nc, config)
    _trace_fetches(
        worker,
        str(spec.get("label", "w")),
        int(spec.get("hold_fetch", 0)),
        float(spec.get("hold_s", 0.0)),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(f"READY {os.getpid()}\n")
    sys.stdout.flush()
    await stop.wait()
    await worker.stop()
    await nc.close()
    return 0


def _trace_fetches(worker: Worker, label: str, hold_fetch: int, hold_s: float) -> None:
    """Print each search the lane fetches (with its delivery count), so a test can see a
    redelivery; with ``hold_fetch`` the N-th one waits ``hold_s`` before it runs, like a
    slow backend (0: hangs like a stuck one, until killed)."""
    fetched = 0

    async def traced(msg: Msg) -> None:
        nonlocal fetched
        fetched += 1
        rid = (msg.headers or {}).get(REQUEST_ID_HEADER, "-")
        print(f"FETCHED {label} {rid} {msg.metadata.num_delivered or 1}", flush=True)
        if fetched == hold_fetch:
            print(f"HOLDING {label} {rid}", flush=True)
            if hold_s > 0:
                await asyncio.sleep(hold_s)
            else:
                await asyncio.Event().wait()

    worker.search.on_fetched = traced


if __name__ == "__main__":
    sys.exit(asyncio.run(main(orjson.loads(sys.argv[1]))))

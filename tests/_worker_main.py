"""A worker in its own process, for the tests that kill, stop or pause one.

``python -m tests._worker_main '<json spec>'``. The spec: ``url`` (comma-separated seeds),
``subjects`` (the Subjects fields), ``label``, optional ``config`` (WorkerConfig overrides)
and one of two kinds of worker:

- ``"tools": "real"`` (the default): index, ingestion and the five tools over ``db``; with
  ``"trace": true`` it prints ``FETCHED <label> <rid> <delivered>`` per search the lane
  fetches, and the ``hold_fetch``-th one prints ``HOLDING <label> <rid>`` and waits
  ``hold_s`` (0: until killed), like a slow or stuck backend.
- ``"tools": "recorded"``: the runtime tests' recording tools (no index; ``tmp`` holds its
  files); prints ``STARTED <tag>`` when a tool starts.

Connects like ``sessionquery serve`` does (reconnect forever), logs JSON lines to stderr
(level from SESSIONQUERY_LOG_LEVEL), prints ``READY`` once serving, stops gracefully on
SIGTERM or SIGINT and then prints ``STOPPED``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.subjects import Subjects
from worker.config import WorkerConfig
from worker.logs import configure_logging
from worker.serving import queue_encoding
from worker.transport.connection import NatsOptions, connect
from worker.worker import Worker


async def main(spec: dict[str, Any]) -> int:
    configure_logging(json=True)
    label = str(spec.get("label", "w"))
    nc = await connect(NatsOptions(url=spec["url"], name=f"test-worker-{label}"))
    worker = await _start(nc, spec, label)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("READY", flush=True)
    await stop.wait()
    await worker.stop()
    await nc.close()
    print("STOPPED", flush=True)
    return 0


async def _start(nc: NATS, spec: dict[str, Any], label: str) -> Worker:
    subjects = Subjects(**spec["subjects"])
    config: dict[str, Any] = spec.get("config", {})
    if spec.get("tools", "real") == "recorded":
        from tests._harness import start_recorded_worker

        recorder, worker = await start_recorded_worker(
            nc, subjects, Path(spec.get("tmp", ".")), **config
        )
        recorder.label, recorder.echo_started = label, True
        return worker
    worker = await Worker.start(
        nc, WorkerConfig(db_path=Path(spec["db"]), subjects=subjects, **config)
    )
    if spec.get("trace", False):
        _trace_fetches(worker, label, int(spec.get("hold_fetch", 0)), float(spec.get("hold_s", 0)))
    return worker


def _trace_fetches(worker: Worker, label: str, hold_fetch: int, hold_s: float) -> None:
    """Print each search the lane fetches (with its delivery count), so a test can see a
    redelivery; with ``hold_fetch`` the N-th one waits ``hold_s`` before it runs, like a
    slow backend (0: hangs like a stuck one, until killed)."""
    fetched = 0

    async def traced(msg: Msg) -> None:
        nonlocal fetched
        fetched += 1
        queued = queue_encoding.decode(msg.data, msg.headers)
        rid = queued.request_id if isinstance(queued, queue_encoding.QueuedSearch) else "-"
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

"""A worker in its own process, for fault tests (SIGKILL, SIGTERM).

``python -m tests.runtime._worker_proc '<json>'`` with ``url``, ``subjects`` (the Subjects
fields), ``label`` and optional config overrides. Prints ``READY`` once serving and
``STARTED <tag>`` when a test tool starts; SIGTERM stops it gracefully.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import orjson

from contracts.subjects import Subjects
from tests.runtime._runtime_helpers import Recorder, config_for, make_toolset, serving
from worker.runtime.connection import open_connection
from worker.runtime.worker import Worker


async def main(spec: dict[str, Any]) -> int:
    nc = await open_connection(spec["url"], max_reconnect_attempts=-1)
    subjects = Subjects(**spec["subjects"])
    config = config_for(subjects, Path(spec.get("tmp", ".")), **spec.get("config", {}))
    recorder = Recorder(label=spec["label"], echo_started=True)
    worker = await Worker.start(nc, config, tools=serving(make_toolset(recorder)))
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("READY", flush=True)
    await stop.wait()
    await worker.stop()
    await nc.close()
    print("STOPPED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(orjson.loads(sys.argv[1]))))

"""Child processes for benches: a real ``Worker``, a raw nats-py echo responder, or a
JetStream work-queue echo (the search lane's floor).

A deployment runs the worker in its own process; so do the benches, so the requesting
side and the serving side do not share one interpreter (and one core). The echo floor's
responder runs the same way, so floor and measurement see the same topology.

``python -m bench.child worker --nats-url URL --db PATH --subjects JSON [--set k=v ...]``
``python -m bench.child echo --nats-url URL --subject SUBJECT``

Each prints ``READY <pid>`` on stdout once serving and stops cleanly on SIGTERM. With
``SQ_BENCH_PROFILE=/tmp/prof`` each child profiles its event loop to ``/tmp/prof.<mode>.<pid>``;
with ``SQ_BENCH_MEMORY=/tmp/mem`` a worker child answers SIGUSR1 with ``bench.memory_probe``'s
report.
Parents use ``ChildProcess``; it only ever signals the pid it started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
# Set to a path prefix to profile each child's event loop (cProfile, dumped on exit).
PROFILE_ENV = "SQ_BENCH_PROFILE"
# Set to a path prefix: SIGUSR1 makes a worker child write where its memory is
# (bench.memory_probe).
MEMORY_ENV = "SQ_BENCH_MEMORY"


@dataclass
class ChildProcess:
    """One child started by a bench; ``stop`` signals exactly that pid."""

    args: list[str]
    log_path: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # set for this child only
    process: asyncio.subprocess.Process | None = field(default=None, init=False)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self, ready_s: float = 60.0) -> int:
        env = {**os.environ, **self.env, "PYTHONPATH": str(REPO_ROOT)}
        stderr: Any = subprocess.DEVNULL
        if self.log_path is not None:
            stderr = self.log_path.open("ab")
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.child",
            *self.args,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=str(REPO_ROOT),
        )
        if self.log_path is not None:
            stderr.close()
        assert self.process.stdout is not None
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), ready_s)
        except TimeoutError:
            await self.stop()
            raise RuntimeError(f"bench child {self.args[0]} not ready in {ready_s} s") from None
        if not line.startswith(b"READY"):
            await self.stop()
            raise RuntimeError(f"bench child {self.args[0]} failed to start (see its log)")
        return self.pid

    async def stop(self, grace_s: float = 30.0) -> int | None:
        proc, self.process = self.process, None
        if proc is None:
            return None
        if proc.returncode is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), grace_s)
            except TimeoutError:
                os.kill(proc.pid, signal.SIGKILL)
                await proc.wait()
        return proc.returncode


def worker_args(
    url: str, db: Path, subjects: Any, partitions: str = "all", **settings: int
) -> list[str]:
    names = json.dumps(asdict(subjects))
    args = ["worker", "--nats-url", url, "--db", str(db), "--subjects", names]
    args += ["--partitions", partitions]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    return args


def echo_args(url: str, subject: str) -> list[str]:
    return ["echo", "--nats-url", url, "--subject", subject]


def work_queue_echo_args(url: str, subject: str) -> list[str]:
    return ["wq-echo", "--nats-url", url, "--subject", subject]


def _stream_seq(db: Path) -> int:
    from worker.store.files.index_file import applied_seq

    return applied_seq(db)


async def wait_ingested(db: Path, last_seq: int, timeout_s: float) -> float:
    """Poll an index's stored stream seq (own connection) until ``last_seq``; seconds waited."""
    t0 = time.perf_counter()
    while await asyncio.to_thread(_stream_seq, db) < last_seq:
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"the worker did not ingest {last_seq} events in {timeout_s} s")
        await asyncio.sleep(0.2)
    return time.perf_counter() - t0


def _search_lag(db: Path) -> int:
    """Events the store holds that the search index's last commit does not cover."""
    from worker.store.search.search_reader import SearchIndexReader

    conn = sqlite3.connect(str(db))
    try:
        last = int(conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0])
    except sqlite3.OperationalError:
        return 1  # the schema is not created yet
    finally:
        conn.close()
    reader = SearchIndexReader.open(db)
    if reader is None:
        return max(1, last)
    return max(0, last - reader.refresh().event_id)


async def wait_searchable(db: Path, timeout_s: float, *, poll_s: float = 0.01) -> float:
    """Poll until the search index's committed position reaches the store's last event
    (``SearchIndexReader.open(db).refresh().event_id >= max(id)``); seconds waited."""
    t0 = time.perf_counter()
    while await asyncio.to_thread(_search_lag, db) > 0:
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"the search index did not catch up in {timeout_s} s")
        await asyncio.sleep(poll_s)
    return time.perf_counter() - t0


@dataclass(frozen=True)
class Fleet:
    url: str
    subjects: Any
    nc: Any  # the requesting side's connection
    pids: tuple[int, ...]
    work_dir: Path


@asynccontextmanager
async def local_fleet(
    config: Any,
    *,
    workers: int = 1,
    url: str | None = None,
    work_dir: Path | None = None,
    ingest_timeout_s: float = 1800.0,
    shards: Sequence[str] = (),
    **settings: int,
) -> AsyncIterator[Fleet]:
    """A corpus published to fresh streams and ``workers`` worker processes (each its own
    index, as replicas are) that have ingested it; nats-server started unless ``url``.
    ``shards``: worker i holds ``shards[i]`` (default: every worker holds all)."""
    import nats

    from bench import corpus
    from bench.report import bench_subjects, nats_url
    from worker.replica.continuity import stream_state

    held = list(shards) or ["all"] * workers

    async with nats_url(url) as resolved:
        with tempfile.TemporaryDirectory(prefix="sq-bench-fleet-", dir=work_dir) as tmp:
            root = Path(tmp)
            subjects = bench_subjects("fleet")
            nc = await nats.connect(resolved, max_reconnect_attempts=-1, reconnect_time_wait=0.5)
            js = nc.jetstream()
            children = [
                ChildProcess(
                    worker_args(
                        resolved, root / f"worker{i}.sqlite", subjects, held[i], **settings
                    ),
                    log_path=root / f"worker{i}.log",
                )
                for i in range(workers)
            ]
            try:
                await corpus.publish_corpus(js, subjects, config)
                pids = [await child.start() for child in children]
                for i in range(workers):
                    state = await stream_state(js, subjects.events_stream, held[i], subjects)
                    last = state.target_seq  # a shard's: the last event of its partitions
                    await wait_ingested(root / f"worker{i}.sqlite", last, ingest_timeout_s)
                    await wait_searchable(root / f"worker{i}.sqlite", ingest_timeout_s)
                yield Fleet(resolved, subjects, nc, tuple(pids), root)
            finally:
                for child in children:
                    await child.stop()
                for stream in (subjects.events_stream, subjects.search_stream):
                    with contextlib.suppress(Exception):
                        await js.delete_stream(stream)
                with contextlib.suppress(Exception):
                    await js.delete_object_store(subjects.spill_bucket)
                await nc.close()


async def _serve_worker(args: argparse.Namespace) -> None:
    from contracts.subjects import Subjects
    from worker.config import WorkerConfig
    from worker.logs import configure_logging
    from worker.transport.connection import open_connection
    from worker.worker import Worker

    configure_logging(json=True)  # stderr: the parent points it at a log file
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = int(value)
    config = WorkerConfig(
        db_path=Path(args.db),
        subjects=Subjects(**json.loads(args.subjects)),
        partitions=args.partitions,
        **overrides,
    )
    # open_connection: the worker's slow-consumer handler needs its error route.
    nc = await open_connection(args.nats_url, name="sessionquery-bench-worker")
    stop = _stop_event()
    if probe_to := os.environ.get(MEMORY_ENV):
        from bench.memory_probe import install

        install(probe_to)  # before the worker starts: tracing (if asked) sees its ingest
    worker = await Worker.start(nc, config)
    _ready()
    try:
        await stop.wait()
    finally:
        await worker.stop()
        await nc.close()


async def _serve_echo(args: argparse.Namespace) -> None:
    import nats

    nc = await nats.connect(args.nats_url, name="sessionquery-bench-echo")
    stop = _stop_event()

    async def handler(msg: Any) -> None:
        await msg.respond(msg.data)

    sub = await nc.subscribe(args.subject, cb=handler)
    await nc.flush()
    _ready()
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        await nc.close()


async def _serve_work_queue_echo(args: argparse.Namespace) -> None:
    """The search lane's floor: each request is put on a work-queue stream (publish, the
    stream's ack), pulled back by the one durable consumer, answered and acked, as the
    search lane does with a search; nothing else."""
    import nats
    from nats.js import api

    nc = await nats.connect(args.nats_url, name="sessionquery-bench-wq-echo")
    js = nc.jetstream()
    stream, queued = f"SQBENCH_WQ_{args.subject.rsplit('.', 1)[-1]}", f"{args.subject}.queued"
    await js.add_stream(name=stream, subjects=[queued], retention=api.RetentionPolicy.WORK_QUEUE)
    pull = await js.pull_subscribe(queued, durable="echo", stream=stream)
    stop = _stop_event()

    async def handler(msg: Any) -> None:
        await js.publish(queued, msg.data, headers={"Reply-To": msg.reply})

    async def lane() -> None:
        while not stop.is_set():
            try:
                taken = await pull.fetch(1, timeout=1)
            except nats.errors.TimeoutError:
                continue
            for queued_msg in taken:
                reply_to = (queued_msg.headers or {}).get("Reply-To")
                if reply_to:
                    await nc.publish(reply_to, queued_msg.data)
                await queued_msg.ack()

    sub = await nc.subscribe(args.subject, cb=handler)
    await nc.flush()
    pulling = asyncio.create_task(lane())
    _ready()
    try:
        await stop.wait()
    finally:
        pulling.cancel()
        with contextlib.suppress(BaseException):
            await pulling
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        with contextlib.suppress(Exception):
            await js.delete_stream(stream)
        await nc.close()


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _ready() -> None:
    sys.stdout.write(f"READY {os.getpid()}\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.child", description=__doc__)
    sub = parser.add_subparsers(dest="mode", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--nats-url", required=True)
    w.add_argument("--db", required=True)
    w.add_argument("--subjects", required=True, help="Subjects as JSON")
    w.add_argument("--set", action="append", default=[], help="integer WorkerConfig field")
    w.add_argument("--partitions", default="all", help="the partition set it holds")
    for mode in ("echo", "wq-echo"):
        e = sub.add_parser(mode)
        e.add_argument("--nats-url", required=True)
        e.add_argument("--subject", required=True)
    args = parser.parse_args(argv)
    serve = {"worker": _serve_worker, "echo": _serve_echo, "wq-echo": _serve_work_queue_echo}[
        args.mode
    ]
    profile_to = os.environ.get(PROFILE_ENV)
    if not profile_to:
        asyncio.run(serve(args))
        return 0
    import cProfile

    # The event loop's thread only: store work on reader threads shows as waiting. Its CPU
    # time, not the wall clock: a profile of a loaded machine otherwise shows time spent
    # descheduled (after a send woke nats-server) as the send's own.
    with cProfile.Profile(time.thread_time) as profile:
        asyncio.run(serve(args))
    profile.dump_stats(f"{profile_to}.{args.mode}.{os.getpid()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

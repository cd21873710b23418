"""``sessionquery serve``: run the worker until SIGTERM/SIGINT.

With no ``--nats-url`` / ``NATS_URL`` it starts an embedded nats-server on 127.0.0.1 with
JetStream under ``./.sessionquery/`` and stops it on exit. Every worker setting has a
flag; each defaults to its ``SESSIONQUERY_<FIELD>`` environment variable, then to the built-in
default. Shutdown is graceful: the worker stops taking work and answers what it holds, then
the connection drains, then the embedded server (if any) stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import structlog
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import ServiceUnavailableError

from worker import config_flags as settings
from worker.commands.process import Watchdog, bounded_stop, close, refuse, say, signal_event
from worker.commands.sample_publish import example_command, publish_sample_corpus
from worker.config import ENV_PREFIX, WorkerConfig
from worker.failures import RuntimeFailure
from worker.replica import semantic
from worker.retry import STARTUP, RetryStopped, retry
from worker.settings import ConfigError
from worker.transport.connection import NatsOptions
from worker.transport.flags import add_nats_arguments, options_from_args

if TYPE_CHECKING:
    from worker.worker import Worker


def _refusals() -> tuple[type[Exception], ...]:
    from worker.replica.continuity import StreamDiverged
    from worker.serving.search_queue import OverlappingShards
    from worker.store.files.index_file import IndexFileError
    from worker.store.files.schema import SchemaVersionError

    return (IndexFileError, SchemaVersionError, StreamDiverged, ConfigError, OverlappingShards)


log = structlog.get_logger("worker.commands.serve")

DEFAULT_HOME: Final = Path(".sessionquery")
DEFAULT_EMBEDDED_PORT: Final = 4222
# The embedded server's memory (docs/operations.md, "Sizing"): with serve + writer within
# 300 MiB, the whole tree stays within 512 MiB.
DEFAULT_EMBEDDED_MEMORY_MIB: Final = 160
DEFAULT_EMBEDDED_JS_MEMORY_MIB: Final = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_nats_arguments(parser)
    settings.add_flags(
        parser.add_argument_group(
            "worker configuration", "each flag defaults to its SESSIONQUERY_* variable"
        )
    )
    embedded = parser.add_argument_group("embedded nats-server (when no NATS URL is given)")
    embedded.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get(ENV_PREFIX + "HOME") or DEFAULT_HOME),
        help="state directory: the embedded server's JetStream store and, unless --db is "
        "given, the index (default ./.sessionquery)",
    )
    embedded.add_argument(
        "--embedded-port",
        type=int,
        default=None,
        help=f"client port (default {DEFAULT_EMBEDDED_PORT} when free, else any free port)",
    )
    embedded.add_argument(
        "--embedded-memory-mib",
        type=int,
        default=DEFAULT_EMBEDDED_MEMORY_MIB,
        help="the embedded server's Go memory limit (GOMEMLIMIT; default"
        f" {DEFAULT_EMBEDDED_MEMORY_MIB}; 0: none)",
    )
    embedded.add_argument(
        "--embedded-js-memory-mib",
        type=int,
        default=DEFAULT_EMBEDDED_JS_MEMORY_MIB,
        help="the embedded server's JetStream memory storage (max_memory_store; default"
        f" {DEFAULT_EMBEDDED_JS_MEMORY_MIB})",
    )
    parser.add_argument(
        "--sample-corpus",
        action="store_true",
        help="publish the shipped sample corpus (two workspaces) before serving",
    )
    parser.add_argument("--log-level", default="info", help="debug, info, warning, error")
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default=None,
        help="default: console on a terminal, else JSON lines",
    )


def config_from_args(args: argparse.Namespace) -> WorkerConfig:
    """Flags over ``SESSIONQUERY_*`` variables over defaults; the index sits beside the
    embedded server's store (``--home``) unless placed elsewhere."""
    config = settings.config_from_args(args)
    if "db_path" not in config.model_fields_set:
        home = getattr(args, "home", DEFAULT_HOME)
        config = config.model_copy(update={"db_path": home / "index.sqlite"})
    return config


def run(args: argparse.Namespace) -> int:
    from worker.logs import configure_logging

    json_logs = None if args.log_format is None else args.log_format == "json"
    try:
        configure_logging(json=json_logs, level=args.log_level)
        config = config_from_args(args)
    except (ValueError, TypeError) as exc:
        refuse(exc)
        return 2
    return asyncio.run(
        serve(
            config,
            options_from_args(args),
            home=args.home,
            embedded_port=args.embedded_port,
            sample_corpus=args.sample_corpus,
            embedded_memory=EmbeddedMemory(
                go_mib=args.embedded_memory_mib or None,
                jetstream_mib=args.embedded_js_memory_mib,
            ),
        )
    )


@dataclass(frozen=True, slots=True)
class EmbeddedMemory:
    """The embedded server's memory bounds (None: the server's own default)."""

    go_mib: int | None = DEFAULT_EMBEDDED_MEMORY_MIB
    jetstream_mib: int | None = DEFAULT_EMBEDDED_JS_MEMORY_MIB


class ServeRefused(RuntimeFailure):
    """``serve`` cannot start: the message is the one line it prints."""


async def serve(
    config: WorkerConfig,
    options: NatsOptions,
    *,
    home: Path = DEFAULT_HOME,
    embedded_port: int | None = None,
    sample_corpus: bool = False,
    stop: asyncio.Event | None = None,
    embedded_memory: EmbeddedMemory | None = None,
) -> int:
    """Serve until ``stop`` is set (by default: on SIGTERM or SIGINT). Returns the exit code.

    From the stop signal (or the start of a stop) the process exits within
    ``shutdown_timeout_ms`` whatever it is doing: a watchdog thread ends it then. With
    ``stop`` given (an embedding, a test) the watchdog is disarmed when this returns; on a
    signal it stays armed until the process exits, so nothing after this can hang it."""
    watchdog = Watchdog(config.shutdown_timeout_ms / 1000)
    embedded_call = stop is not None
    stop = stop or signal_event(watchdog)
    try:
        memory = embedded_memory or EmbeddedMemory()
        async with _nats_url(options, home, embedded_port, memory) as options:
            return await _connect_and_serve(
                config, options, stop, watchdog, sample_corpus=sample_corpus
            )
    except ServeRefused as exc:
        refuse(exc)
        return 1
    finally:
        if embedded_call:
            watchdog.disarm()


@contextlib.asynccontextmanager
async def _nats_url(
    options: NatsOptions, home: Path, embedded_port: int | None, memory: EmbeddedMemory
) -> AsyncIterator[NatsOptions]:
    """The options as given when they name a URL; else an embedded nats-server's, for the
    duration. One embedded server per home: a second ``serve`` on it refuses first."""
    from worker.store.files.index_file import IndexLock, IndexLocked
    from worker.transport.embedded_server import EmbeddedNatsServer, EmbeddedServerError

    if options.url is not None:
        yield options
        return
    try:
        home_lock = IndexLock(home / "nats", what="state directory").acquire()
    except IndexLocked as exc:
        raise ServeRefused(exc) from None
    try:
        # Its own session: a terminal's Ctrl-C reaches us only, so we stop the worker first
        # and the server last rather than losing in-flight replies. It dies with us.
        embedded = EmbeddedNatsServer(
            store_dir=home / "nats",
            port=embedded_port if embedded_port is not None else _default_port(),
            server_name="sessionquery-embedded",
            new_session=True,
            die_with_parent=True,
            memory_limit_mib=memory.go_mib,
            jetstream_memory_mib=memory.jetstream_mib,
        )
        try:
            embedded.start()  # on this (the main) thread: its death signal follows it
        except EmbeddedServerError as exc:
            raise ServeRefused(exc) from None
        say(f"nats-server (embedded) listening on {embedded.url}; JetStream under {home}/nats")
        say(f"  connect with: export NATS_URL={embedded.url}")
        try:
            yield options.with_url(embedded.url)
        finally:
            await asyncio.to_thread(embedded.stop)
            log.info("embedded nats-server stopped")
    finally:
        home_lock.release()


async def _connect_and_serve(
    config: WorkerConfig,
    options: NatsOptions,
    stop: asyncio.Event,
    watchdog: Watchdog,
    *,
    sample_corpus: bool,
) -> int:
    from worker.transport.connection import ConnectFailed, connect_reporting

    try:
        nc = await connect_reporting(options, stop=stop)
    except ConnectFailed as exc:
        refuse(exc)
        return 0 if stop.is_set() else 1
    try:
        sample_seq = await _publish_sample(nc, config, options) if sample_corpus else None
        if config.partitions != "all":
            sample_seq = None  # a shard's index never reaches the stream's last seq
        return await _serve_connected(nc, config, stop, watchdog, sample_seq=sample_seq)
    finally:
        await close(nc)


# A clustered JetStream answers its API only once its meta leader is elected, and a stream
# leader may be moving: the worker's setup is retried for this long before serve gives up.
STARTUP_RETRY_S: Final = 60.0
_NOT_READY: Final = (NatsTimeoutError, NoRespondersError, ServiceUnavailableError)


async def start_when_ready(
    nc: NATS, config: WorkerConfig, stop: asyncio.Event, *, within: float = STARTUP_RETRY_S
) -> Worker | None:
    """``Worker.start``, retried while JetStream is not ready; None if stopped meanwhile."""
    from worker.worker import Worker

    def not_ready(exc: Exception, failures: int, wait: float) -> None:
        log.warning("JetStream not ready; retrying worker start", error=type(exc).__name__)

    try:
        return await retry(
            STARTUP.within(within),
            lambda: Worker.start(nc, config),
            on=lambda exc: isinstance(exc, _NOT_READY),
            stop=stop,
            log=not_ready,
        )
    except RetryStopped:
        return None


async def _publish_sample(nc: NATS, config: WorkerConfig, options: NatsOptions) -> int:
    """Publish the sample corpus; returns the stream sequence it ends at."""
    from worker.commands import sample_corpus as sample

    count, last = await publish_sample_corpus(nc, config.subjects)
    say(
        f"sample corpus: {count} events published to stream {config.subjects.events_stream}"
        + ("" if count else " (already there)")
    )
    say("  try:")
    say("    " + example_command(options.url or "", config.subjects))
    say(f"  (caller {sample.DEMO_CALLER} works in {sample.PAYMENTS})")
    return last


# How long serve waits for the sample corpus to be indexed before it says it is serving.
SAMPLE_INDEXED_WAIT_S: Final = 30.0


async def _until_indexed(worker: Worker, seq: int, stop: asyncio.Event) -> None:
    """Wait (bounded) until the index holds the stream through ``seq``, so the printed
    ``try:`` line answers as soon as serving is said, instead of "not in the index yet"."""
    deadline = asyncio.get_running_loop().time() + SAMPLE_INDEXED_WAIT_S
    while not stop.is_set() and asyncio.get_running_loop().time() < deadline:
        through = await worker.indexed_through()
        if through is not None and through >= seq:
            return
        await asyncio.sleep(0.05)
    if not stop.is_set():
        log.warning("sample corpus not indexed yet; serving anyway", stream_seq=seq)


async def _serve_connected(
    nc: NATS,
    config: WorkerConfig,
    stop: asyncio.Event,
    watchdog: Watchdog,
    *,
    sample_seq: int | None = None,
) -> int:
    try:
        worker = await start_when_ready(nc, config, stop)
    except _refusals() as exc:
        log.error("worker not started: " + str(exc))
        refuse(exc)
        return 1
    if worker is None:
        return 0
    if sample_seq is not None:
        await _until_indexed(worker, sample_seq, stop)
    say(
        f"serving the five session query tools on {config.subjects.prefix}.tool.* "
        f"(index {config.db_path}); Ctrl-C or SIGTERM stops"
    )
    say(semantic.describe(config))
    try:
        reason = await _until_stopped(worker, stop)
    finally:
        if stop.is_set():
            log.info("shutdown requested")
        await bounded_stop(worker, watchdog)
    if reason is None:
        return 0
    # A divergence with --on-divergence refuse, or the index file removed or replaced.
    refuse(f"ingestion stopped: {reason}")
    return 1


async def _until_stopped(worker: Worker, stop: asyncio.Event) -> Exception | None:
    """None when asked to stop; the reason when ingestion stopped for good."""
    stopping = asyncio.ensure_future(stop.wait())
    waiters: set[asyncio.Future[Any]] = {stopping}
    if worker.fatal is not None:
        waiters.add(worker.fatal)
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    fatal = worker.fatal
    if fatal is not None and fatal.done() and not stop.is_set():
        return fatal.result()
    return None


def _default_port() -> int:
    """4222 when free, so the printed URL is the usual one; else any free port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", DEFAULT_EMBEDDED_PORT))
        except OSError:
            return -1
    return DEFAULT_EMBEDDED_PORT


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sessionquery serve", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))

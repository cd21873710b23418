"""``sessionquery serve``: run the worker until SIGTERM/SIGINT.

With no ``--nats-url`` / ``NATS_URL`` it starts an embedded nats-server on 127.0.0.1 with
JetStream under ``./.sessionquery/`` and stops it on exit. Every ``WorkerConfig`` field has a
flag; each defaults to its ``SESSIONQUERY_<FIELD>`` environment variable, then to the built-in
default. Shutdown is graceful: the worker stops taking work and answers what it holds, then
the connection drains, then the embedded server (if any) stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import ServiceUnavailableError

from contracts.subjects import Subjects
from worker.retry import STARTUP, RetryStopped, retry
from worker.runtime.config import ENV_PREFIX, WorkerConfig
from worker.runtime.connection import NatsOptions, add_nats_arguments, options_from_args
from worker.tools import ToolConfig

if TYPE_CHECKING:
    from worker.runtime.worker import Worker


def _refusals() -> tuple[type[Exception], ...]:
    from worker.runtime.continuity import StreamDiverged
    from worker.store.index_file import IndexFileError
    from worker.store.schema import SchemaVersionError

    return (IndexFileError, SchemaVersionError, StreamDiverged)


log = structlog.get_logger("worker.runtime.serve")

DEFAULT_HOME: Final = Path(".sessionquery")
DEFAULT_EMBEDDED_PORT: Final = 4222
DRAIN_TIMEOUT_S: Final = 10.0
# Fields set another way (subjects by --subject-prefix; tools field by field).
_NOT_FLAGS: Final = frozenset({"subjects", "tools"})
# Short aliases for the flags people type most.
_ALIASES: Final = {"db_path": ("--db",), "max_search_results": ("--max-results",)}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _config_fields() -> list[tuple[str, dataclasses.Field[Any], Any]]:
    """(group, field, default) for every scalar field of WorkerConfig and ToolConfig."""
    out: list[tuple[str, dataclasses.Field[Any], Any]] = []
    worker_defaults = WorkerConfig()
    for f in dataclasses.fields(WorkerConfig):
        if f.name not in _NOT_FLAGS:
            out.append(("worker", f, getattr(worker_defaults, f.name)))
    tool_defaults = ToolConfig()
    for f in dataclasses.fields(ToolConfig):
        out.append(("tools", f, getattr(tool_defaults, f.name)))
    return out


def _kind(value: Any) -> type:
    if isinstance(value, bool):
        raise TypeError("boolean config fields need an explicit flag")
    if isinstance(value, int):
        return int
    if isinstance(value, Path):
        return Path
    return str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from worker.runtime.ingest_consumer import add_subject_arguments

    add_nats_arguments(parser)
    add_subject_arguments(parser)
    config = parser.add_argument_group(
        "worker configuration", "each flag defaults to its SESSIONQUERY_* variable"
    )
    for _group, f, default in _config_fields():
        env = ENV_PREFIX + f.name.upper()
        config.add_argument(
            _flag(f.name),
            *_ALIASES.get(f.name, ()),
            dest=f"cfg_{f.name}",
            type=_kind(default),
            default=None,
            metavar={int: "N", Path: "PATH"}.get(_kind(default), "TEXT"),
            help=f"env {env} (default {os.environ.get(env, default)})",
        )
    config.add_argument(
        "--subject-prefix",
        default=os.environ.get(ENV_PREFIX + "SUBJECT_PREFIX"),
        help=f"env {ENV_PREFIX}SUBJECT_PREFIX (default sessionquery)",
    )
    embedded = parser.add_argument_group("embedded nats-server (when no NATS URL is given)")
    embedded.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get(ENV_PREFIX + "HOME", DEFAULT_HOME)),
        help="state directory: the embedded server's JetStream store and, unless --db is "
        "given, the index (default ./.sessionquery)",
    )
    embedded.add_argument(
        "--embedded-port",
        type=int,
        default=None,
        help=f"client port (default {DEFAULT_EMBEDDED_PORT} when free, else any free port)",
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
    """Environment first, then flags; flags win."""
    config = _config_from_args(args)
    if config.on_divergence not in ("rebuild", "refuse"):
        raise ValueError(f"--on-divergence must be rebuild or refuse, got {config.on_divergence!r}")
    return config


def _config_from_args(args: argparse.Namespace) -> WorkerConfig:
    config = WorkerConfig.from_env()
    worker_values: dict[str, Any] = {}
    tool_values: dict[str, Any] = {}
    for group, f, _default in _config_fields():
        value = getattr(args, f"cfg_{f.name}", None)
        if value is not None:
            (worker_values if group == "worker" else tool_values)[f.name] = value
    home = getattr(args, "home", DEFAULT_HOME)
    if "db_path" not in worker_values and ENV_PREFIX + "DB_PATH" not in os.environ:
        # The index sits beside the embedded server's store unless placed elsewhere.
        worker_values["db_path"] = home / "index.sqlite"
    subjects = config.subjects
    if args.subject_prefix:
        subjects = dataclasses.replace(subjects, prefix=args.subject_prefix)
    if getattr(args, "stream", None):
        subjects = dataclasses.replace(
            subjects,
            events_stream=args.stream,
            events_prefix=args.events_prefix,
            deadletter=args.deadletter,
        )
    if subjects != config.subjects:
        worker_values["subjects"] = subjects
    if tool_values:
        worker_values["tools"] = dataclasses.replace(config.tools, **tool_values)
    return dataclasses.replace(config, **worker_values)


def run(args: argparse.Namespace) -> int:
    from worker.logs import configure_logging

    json_logs = None if args.log_format is None else args.log_format == "json"
    try:
        configure_logging(json=json_logs, level=args.log_level)
        config = config_from_args(args)
    except (ValueError, TypeError) as exc:
        print(f"sessionquery serve: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(
        serve(
            config,
            options_from_args(args),
            home=args.home,
            embedded_port=args.embedded_port,
            sample_corpus=args.sample_corpus,
        )
    )


async def serve(
    config: WorkerConfig,
    options: NatsOptions,
    *,
    home: Path = DEFAULT_HOME,
    embedded_port: int | None = None,
    sample_corpus: bool = False,
    stop: asyncio.Event | None = None,
) -> int:
    """Serve until ``stop`` is set (by default: on SIGTERM or SIGINT). Returns the exit code."""
    from worker.runtime.embedded_server import EmbeddedNatsServer, EmbeddedServerError
    from worker.store.index_file import IndexLock, IndexLocked

    stop = stop or _signal_event(config.shutdown_timeout_ms / 1000)
    embedded: EmbeddedNatsServer | None = None
    home_lock: IndexLock | None = None
    if options.url is None:
        # One embedded server per home: a second ``serve`` on it refuses before starting one.
        try:
            home_lock = IndexLock(home / "nats", what="state directory").acquire()
        except IndexLocked as exc:
            print(f"sessionquery serve: {exc}", file=sys.stderr)
            return 1
        port = embedded_port if embedded_port is not None else _default_port()
        # Its own session: a terminal's Ctrl-C reaches us only, so we stop the worker first
        # and the server last rather than losing in-flight replies. It dies with us.
        embedded = EmbeddedNatsServer(
            store_dir=home / "nats",
            port=port,
            server_name="sessionquery-embedded",
            new_session=True,
            die_with_parent=True,
        )
        try:
            embedded.start()  # on this (the main) thread: its death signal follows it
        except EmbeddedServerError as exc:
            print(f"sessionquery serve: {exc}", file=sys.stderr)
            home_lock.release()
            return 1
        options = options.with_url(embedded.url)
        _say(f"nats-server (embedded) listening on {embedded.url}; JetStream under {home}/nats")
        _say(f"  connect with: export NATS_URL={embedded.url}")
    try:
        return await _connect_and_serve(config, options, stop, sample_corpus=sample_corpus)
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
            log.info("embedded nats-server stopped")
        if home_lock is not None:
            home_lock.release()


async def _connect_and_serve(
    config: WorkerConfig, options: NatsOptions, stop: asyncio.Event, *, sample_corpus: bool
) -> int:
    from worker.runtime.connection import ConnectFailed, connect_reporting

    try:
        nc = await connect_reporting(options, stop=stop)
    except ConnectFailed as exc:
        print(f"sessionquery serve: {exc}", file=sys.stderr)
        return 0 if stop.is_set() else 1
    try:
        return await _serve_connected(nc, config, options, stop, sample_corpus=sample_corpus)
    finally:
        await _close(nc)


# A clustered JetStream answers its API only once its meta leader is elected, and a stream
# leader may be moving: the worker's setup is retried for this long before serve gives up.
STARTUP_RETRY_S: Final = 60.0
_NOT_READY: Final = (NatsTimeoutError, NoRespondersError, ServiceUnavailableError)


async def start_when_ready(
    nc: NATS, config: WorkerConfig, stop: asyncio.Event, *, within: float = STARTUP_RETRY_S
) -> Worker | None:
    """``Worker.start``, retried while JetStream is not ready; None if stopped meanwhile."""
    from worker.runtime.worker import Worker

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


async def _serve_connected(
    nc: NATS,
    config: WorkerConfig,
    options: NatsOptions,
    stop: asyncio.Event,
    *,
    sample_corpus: bool,
) -> int:

    if sample_corpus:
        from worker.runtime import sample_corpus as sample

        count, _last = await publish_sample_corpus(nc, config.subjects)
        _say(
            f"sample corpus: {count} events published to stream {config.subjects.events_stream}"
            + ("" if count else " (already there)")
        )
        _say("  try:")
        _say("    " + example_command(options.url or "", config.subjects))
        _say(f"  (caller {sample.DEMO_CALLER} works in {sample.PAYMENTS})")
    try:
        worker = await start_when_ready(nc, config, stop)
    except _refusals() as exc:
        log.error("worker not started: " + str(exc))
        print(f"sessionquery serve: {exc}", file=sys.stderr)
        return 1
    if worker is None:
        return 0
    _say(
        f"serving the five session query tools on {config.subjects.prefix}.tool.* "
        f"(index {config.db_path}); Ctrl-C or SIGTERM stops"
    )
    try:
        reason = await _until_stopped(worker, stop)
    finally:
        if stop.is_set():
            log.info("shutdown requested")
        await _bounded_stop(worker, config.shutdown_timeout_ms / 1000)
    if reason is None:
        return 0
    # A divergence with --on-divergence refuse, or the index file removed or replaced.
    print(f"sessionquery serve: ingestion stopped: {reason}", file=sys.stderr)
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


async def _bounded_stop(worker: Worker, within_s: float) -> None:
    """``worker.stop`` within ``within_s``; past it the process exits at once (the index
    is consistent: the stream replays whatever was not applied)."""
    try:
        await asyncio.wait_for(worker.stop(), within_s)
    except TimeoutError:
        log.error("stop took longer than the shutdown timeout; exiting now", timeout_s=within_s)
        _exit_now(1)


def _exit_now(code: int) -> None:
    # Children die with us: the writer and the embedded server have PR_SET_PDEATHSIG.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def publish_sample_corpus(nc: NATS, subjects: Subjects) -> tuple[int, int]:
    """Publish the sample corpus; returns (events published, last stream sequence).

    Idempotent: a session whose last event the stream already holds is skipped, and each
    event carries ``Nats-Msg-Id`` so a concurrent re-run is dropped by the server; the
    index stores each (session, seq) once in any case.
    """
    from nats.js.errors import NotFoundError

    from worker.runtime.ingest_consumer import ensure_events_stream
    from worker.runtime.sample_corpus import message_id, sample_events

    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for event in sample_events():
        by_session.setdefault(event["session_id"], []).append(event)
    last = 0
    published = 0
    for session_id, events in by_session.items():
        try:
            held = await js.get_last_msg(subjects.events_stream, subjects.events(session_id))
        except NotFoundError:
            held = None
        if held is not None and held.data and orjson.loads(held.data).get("seq") == len(events):
            last = max(last, int(held.seq or 0))
            continue
        for event in events:
            ack = await js.publish(
                subjects.events(session_id),
                orjson.dumps(event),
                headers={"Nats-Msg-Id": message_id(event)},
            )
            last = max(last, ack.seq)
            published += 1
    return published, last


def example_command(url: str, subjects: Subjects) -> str:
    from worker.runtime import sample_corpus as sample

    argv = [command_path(), "call", "session_search", "--nats-url", url]
    if subjects.prefix != Subjects().prefix:
        argv += ["--subject-prefix", subjects.prefix]
    argv += ["--session", sample.DEMO_CALLER]
    argv += ["--step-start-seq", str(current_step_start(sample.DEMO_CALLER))]
    argv.append('{"query": "flaky refund test"}')
    return " ".join(shlex.quote(a) for a in argv)


def command_path() -> str:
    """How to run ``sessionquery`` from a shell so that a printed line works as pasted.

    ``make run`` does not put the venv on PATH: the bare name is used only when PATH finds
    this same installation, else the script beside this interpreter, by absolute path.
    """
    beside = Path(sys.executable).parent / "sessionquery"
    on_path = shutil.which("sessionquery")
    if on_path is not None and (not beside.exists() or Path(on_path).samefile(beside)):
        return "sessionquery"
    return str(beside.absolute()) if beside.exists() else "sessionquery"


def current_step_start(session_id: str) -> int:
    """Seq of the latest ``step/start`` of a sample session (its current step)."""
    from worker.runtime.sample_corpus import sample_events

    seqs = [
        int(e["seq"])
        for e in sample_events()
        if e["session_id"] == session_id and e["type"] == "step/start"
    ]
    return max(seqs)


def _default_port() -> int:
    """4222 when free, so the printed URL is the usual one; else any free port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", DEFAULT_EMBEDDED_PORT))
        except OSError:
            return -1
    return DEFAULT_EMBEDDED_PORT


def _signal_event(bound_s: float) -> asyncio.Event:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def requested(signum: signal.Signals) -> None:
        if stop.is_set():
            _say(f"{signum.name} again: exiting now")
            _exit_now(130 if signum == signal.SIGINT else 143)
        _say(f"{signum.name}: stopping gracefully within {bound_s:g} s (again to exit now)")
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, requested, sig)
    return stop


async def _close(nc: NATS) -> None:
    # drain() flushes what we still owe the server; it can hang after a batched fetch,
    # so it is bounded and close() always follows.
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.drain(), DRAIN_TIMEOUT_S)
    with contextlib.suppress(Exception):
        await nc.close()


def _say(line: str) -> None:
    """Human-facing lines on stdout (logs go to stderr)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sessionquery serve", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))

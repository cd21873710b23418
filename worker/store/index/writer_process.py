"""The index's single writer in a child process, so ingestion uses two cores.

In one process the event loop (NATS intake, checking messages) and the writer thread
(SQLite) take turns on the GIL and hardly ever run at once: the process's CPU time was its
wall time. Here a child process (``python -m worker.store.index.writer_process``,
``writer_child``) checks each batch (``BatchChecker``) and applies it with the same
``WriterCore`` the thread transport uses, so the rules are one code path: one transaction
per batch, the stream sequence stored in it, duplicates skipped. The serving process only
frames the messages as they came (issue 31: what parsing allocates stays in the child).
Measured against parsing in the parent (each side of the pipe then did about half the
work), two pairs at 100k events: ingest within the noise (9.5-17.7 s against 11.6-15.2)
and RssAnon after ingest no lower (1.85-1.91x a restarted worker's against 1.90-2.09x):
what kept the serving process's arenas was not the parse but the messages queued in
nats-py behind a full mailbox (``worker.replica.feed_backlog``).

The frames are ``writer_wire``'s. A child that dies is reported (``WriterProcessError``,
logged with its exit status) and started again by the next request: ingestion retries the
batch, and the stored stream sequence skips whatever of it had committed before the crash.
A child started again gets ``--expect-index-id`` (the id the first child found in
``meta``): it opens the file without creating it and checks the id, so a removed or
replaced index is answered ``FILE_LOST`` (``IndexFileLost``: ingestion stops) instead of a
fresh empty index that would claim to be complete.

Why a pipe of our own and not ``ProcessPoolExecutor(max_workers=1, initializer=...)``:
measured equal (``bench.ingest --sessions 200 --events 250``: 0.29x and 0.23x of the floor
against 0.17x to 0.32x for the pipe on a loaded machine), but the pool needs more, not
less: a thread and a lock in the child for the idle search commit (the pipe's loop waits
on ``select``), a new executor after a crash (``BrokenProcessPool`` fails every pending
call), the ``FILE_LOST`` reason lost when the initializer fails, and no torn-frame
guarantee of our own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import orjson
import structlog

from contracts.redaction import REDACTION_ON, RedactionSpec
from worker.store.errors import IndexFileLost as IndexFileLost
from worker.store.errors import WriterProcessError as WriterProcessError
from worker.store.index.writer import IndexWriter, SqliteIndexWriter
from worker.store.index.writer_child import EXIT_TORN, REDACTION_ENV, main
from worker.store.index.writer_limits import DEFAULT_LIMITS, LIMITS_ENV, WriterLimits
from worker.store.index.writer_wire import (
    HEADER,
    OP_BIND,
    OP_GENERATION,
    OP_INFO,
    OP_PURGE,
    OP_SYNC_SEARCH,
    STATUS_FILE_LOST,
    STATUS_NOT_ATTEMPTED,
    STATUS_OK,
    FramedBatch,
    decode_generation,
    decode_purged,
    decode_result,
    encode_batch,
    frame,
)
from worker.store.protocol import Generation
from worker.store.writer_protocol import ApplyResult, BatchNotAttempted, IngestItem

__all__ = [
    "EXIT_TORN",
    "HEADER",
    "STATUS_OK",
    "WRITER_MODES",
    "IndexFileLost",
    "PipeTransport",
    "ProcessIndexWriter",
    "WriterProcessError",
    "encode_batch",
    "open_index_writer",
]

log = structlog.get_logger(__name__)

_START_TIMEOUT_S: Final = 60.0
_EXIT_TIMEOUT_S: Final = 10.0
# Linux: a pipe that holds a whole batch (~200 KB) takes it in one write.
_PIPE_BYTES: Final = 1 << 20
_F_SETPIPE_SZ: Final = 1031
# The directory holding the ``worker`` package (this file is worker/store/index/...), first
# on the child's path, so the child imports this very code.
_ROOT: Final = str(Path(__file__).resolve().parents[3])


WRITER_MODES: Final = ("process", "thread")


async def open_index_writer(
    path: str | Path,
    *,
    mode: str = "process",
    text_cap_bytes: int = 64 * 1024,
    max_event_bytes: int = 1024 * 1024,
    redaction: RedactionSpec = REDACTION_ON,
    limits: WriterLimits = DEFAULT_LIMITS,
) -> ProcessIndexWriter | SqliteIndexWriter:
    """The index writer ingestion uses: in a child process (the default, two cores) or on
    a thread of this process (one core; no child to start)."""
    if mode == "process":
        return await ProcessIndexWriter.open(
            path,
            text_cap_bytes=text_cap_bytes,
            max_event_bytes=max_event_bytes,
            redaction=redaction,
            limits=limits,
        )
    if mode == "thread":
        return await SqliteIndexWriter.open(
            path,
            text_cap_bytes=text_cap_bytes,
            max_event_bytes=max_event_bytes,
            redaction=redaction,
            limits=limits,
        )
    raise ValueError(f"writer mode must be one of {', '.join(WRITER_MODES)}, got {mode!r}")


class ProcessIndexWriter(IndexWriter[FramedBatch]):
    """The index's only writer, in a child process. Use ``await ProcessIndexWriter.open``."""

    _transport: PipeTransport

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        text_cap_bytes: int = 64 * 1024,
        max_event_bytes: int = 1024 * 1024,
        redaction: RedactionSpec = REDACTION_ON,
        limits: WriterLimits = DEFAULT_LIMITS,
    ) -> ProcessIndexWriter:
        """Start the child; raises ``WriterProcessError`` when it cannot open the index."""
        transport = PipeTransport(
            str(path),
            text_cap_bytes=text_cap_bytes,
            max_event_bytes=max_event_bytes,
            redaction=redaction,
            limits=limits,
        )
        await transport.start()
        return cls(transport)

    @property
    def pid(self) -> int | None:
        """The running child's pid (for tests and diagnostics)."""
        return self._transport.pid

    @property
    def restarts(self) -> int:
        """Children started again after one died."""
        return self._transport.restarts

    @property
    def index_id(self) -> str | None:
        """The id of the file the first child opened: a child started again must find it."""
        return self._transport.index_id


class _Child:
    """One writer process and the requests written to it, answered in order."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: deque[asyncio.Future[tuple[int, bytes]]] = deque()
        self.alive = True  # False once its replies ended: nothing more may be written
        self.reader: asyncio.Task[None] | None = None


class PipeTransport:
    """``WriterTransport`` to a child process over a pipe.

    A request is written to the pipe in the caller's own step (a hop through the loop
    first would queue it behind whatever else is ready, a burst of NATS messages, while the
    child sits idle) and answered in order by one reader task per child, so a cancelled
    caller neither tears a frame nor leaves a reply unread for the next request. Nothing
    awaits the pipe's drain: callers wait for their replies, and ingestion keeps at most
    two batches in flight.
    """

    def __init__(
        self,
        location: str,
        *,
        text_cap_bytes: int,
        max_event_bytes: int,
        redaction: RedactionSpec = REDACTION_ON,
        limits: WriterLimits = DEFAULT_LIMITS,
    ) -> None:
        self._location = location
        self._redaction = redaction
        self._limits = limits
        self._text_cap_bytes = text_cap_bytes
        self._max_event_bytes = max_event_bytes
        self._child: _Child | None = None
        self._starting = asyncio.Lock()  # one child started at a time, requests wait for it
        self._closed = False
        self.restarts = 0
        self.index_id: str | None = None

    async def start(self) -> None:
        self._child = await self._spawn()
        index_id = (await self.info()).get("index_id")
        self.index_id = None if index_id is None else str(index_id)

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.proc.pid if child is not None and child.alive else None

    async def close(self) -> None:
        """Wait for the requests in flight, then end the child (EOF at a frame boundary)."""
        if self._closed:
            return
        self._closed = True
        async with self._starting:
            child, self._child = self._child, None
        if child is None:
            return
        if child.pending:
            await asyncio.wait(list(child.pending))
        await _finish(child.proc, close_stdin=True)
        if child.reader is not None:
            await child.reader

    def prepare(self, items: Sequence[IngestItem]) -> FramedBatch:
        # Checked and written there: what parsing allocates stays out of the serving process.
        return FramedBatch(encode_batch(items), items)

    async def apply(self, batch: FramedBatch, *, chained: bool) -> ApplyResult:
        reply = await self._request(batch.chained() if chained else batch.frame)
        return decode_result(reply, batch.items)

    async def purge(self, session_ids: tuple[str, ...], older_than_ms: int | None) -> int:
        body = orjson.dumps({"session_ids": list(session_ids), "older_than_ms": older_than_ms})
        return decode_purged(await self._request(frame(OP_PURGE, body)))

    async def generation(self) -> Generation:
        return decode_generation(await self._request(frame(OP_GENERATION)))

    async def info(self) -> dict[str, object]:
        info: dict[str, object] = orjson.loads(await self._request(frame(OP_INFO)))
        return info

    async def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]:
        body = orjson.dumps(
            {"name": name, "created": created, "first_seq": first_seq, "partitions": partitions}
        )
        info: dict[str, object] = orjson.loads(await self._request(frame(OP_BIND, body)))
        return info

    async def sync_search(self) -> None:
        await self._request(frame(OP_SYNC_SEARCH))

    async def _request(self, request: bytes) -> bytes:
        if self._closed:
            raise WriterProcessError("the index writer is closed")
        child = self._child
        if child is None or not child.alive or self._starting.locked():
            child = await self._running_child()
        reply: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        child.pending.append(reply)
        assert child.proc.stdin is not None
        child.proc.stdin.write(request)
        # Shielded: the reader task resolves it even when this caller is cancelled.
        status, body = await asyncio.shield(reply)
        if status == STATUS_NOT_ATTEMPTED:
            raise BatchNotAttempted(body.decode("utf-8", "replace"))
        if status != STATUS_OK:
            raise WriterProcessError(body.decode("utf-8", "replace"))
        return body

    async def _running_child(self) -> _Child:
        async with self._starting:
            if self._closed:
                raise WriterProcessError("the index writer is closed")
            child = self._child
            if child is None or not child.alive:
                self._child = None
                child = self._child = await self._spawn()
                self.restarts += 1
                log.warning(
                    "writer process started again", pid=child.proc.pid, restarts=self.restarts
                )
            return child

    async def _read_replies(self, child: _Child) -> None:
        stdout = child.proc.stdout
        assert stdout is not None
        code: int | None = None
        try:
            try:
                while True:
                    reply = await _read_frame(stdout)
                    waiter = child.pending.popleft()
                    if not waiter.done():
                        waiter.set_result(reply)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass  # the child exited
            except Exception:
                log.exception("unreadable reply from the writer process", pid=child.proc.pid)
            child.alive = False
            code = await _finish(child.proc, close_stdin=True)
        finally:
            # Whatever ended the replies (even this task's cancellation), nobody waits forever.
            child.alive = False
            self._fail_pending(child, code)

    def _fail_pending(self, child: _Child, code: int | None) -> None:
        lost = len(child.pending)
        if lost or not self._closed:
            log.error(
                "writer process exited", pid=child.proc.pid, returncode=code, requests_lost=lost
            )
        while child.pending:
            waiter = child.pending.popleft()
            if not waiter.done():
                waiter.set_exception(
                    WriterProcessError(f"the writer process exited (status {code})")
                )

    async def _spawn(self) -> _Child:
        proc = await self._start_process()
        assert proc.stdin is not None and proc.stdout is not None
        _grow_pipe(proc.stdin)
        try:
            status, reply = await asyncio.wait_for(_read_frame(proc.stdout), _START_TIMEOUT_S)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError) as exc:
            code = await _finish(proc, close_stdin=True)
            raise WriterProcessError(f"the writer process did not start (status {code})") from exc
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # cancelled while it started: no child left behind
            raise
        if status != STATUS_OK:
            await _finish(proc, close_stdin=True)
            message = reply.decode("utf-8", "replace")
            if status == STATUS_FILE_LOST:
                raise IndexFileLost(message)
            raise WriterProcessError("the writer process could not open the index: " + message)
        child = _Child(proc)
        child.reader = asyncio.create_task(self._read_replies(child), name="writer-replies")
        return child

    async def _start_process(self) -> asyncio.subprocess.Process:
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": _ROOT + (os.pathsep + path if path else "")}
        # In the environment, not the arguments: the allow-list is not for ``ps`` to show.
        env[REDACTION_ENV] = self._redaction.to_json()
        env[LIMITS_ENV] = self._limits.to_json()
        # fmt: off
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "worker.store.index.writer_process",
            "--db", self._location,
            "--text-cap-bytes", str(self._text_cap_bytes),
            "--max-event-bytes", str(self._max_event_bytes),
            "--parent-pid", str(os.getpid()),
            *(["--expect-index-id", self.index_id] if self.index_id else []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        # fmt: on


async def _read_frame(stream: asyncio.StreamReader) -> tuple[int, bytes]:
    status, size = HEADER.unpack(await stream.readexactly(HEADER.size))
    body = await stream.readexactly(size) if size else b""
    return status, body


async def _finish(proc: asyncio.subprocess.Process, *, close_stdin: bool) -> int:
    """Let the child exit (EOF on its stdin ends it), killing it if it does not."""
    if close_stdin and proc.stdin is not None:
        proc.stdin.close()
        with contextlib.suppress(ConnectionError):
            await proc.stdin.wait_closed()
    try:
        return await asyncio.wait_for(proc.wait(), _EXIT_TIMEOUT_S)
    except TimeoutError:
        log.error("writer process did not exit; killing it", pid=proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        return await proc.wait()


def _grow_pipe(stdin: asyncio.StreamWriter) -> None:
    pipe = stdin.get_extra_info("pipe")
    if sys.platform.startswith("linux") and pipe is not None:
        import fcntl

        # Best effort: the default 64 KiB pipe works too, in more writes.
        with contextlib.suppress(OSError):
            fcntl.fcntl(pipe.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)


if __name__ == "__main__":
    sys.exit(main())

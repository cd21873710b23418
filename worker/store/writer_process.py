"""The index's single writer in a child process, so ingestion uses two cores.

In one process the event loop (NATS intake, checking messages) and the writer thread
(SQLite) take turns on the GIL and hardly ever run at once: the process's CPU time was its
wall time. Here the loop checks each batch (``BatchChecker``: validation, searchable text)
and a child process (``python -m worker.store.writer_process``) applies it with the same
``WriterCore`` the thread-based ``SqliteIndexWriter`` uses, so the rules are one code path:
one transaction per batch, the stream sequence stored in it, duplicates skipped. Checking
on the parent's side measured better than sending the raw messages for the child to check:
that left the child with ~50 µs of the ~80 µs of CPU per event and the parent idle half
the time; this way each side does about half.

The wire, on the child's stdin (requests) and a private copy of its stdout (replies; the
child's fd 1 points at stderr so a stray print cannot corrupt a frame): every frame is a
``<BQ`` header (op or status, body length) and its body. Requests are answered in order.

- ``APPLY``: the checked batch as ``batch_rows`` tuples in ``marshal``'s format (both ends
  run the same interpreter, and only the parent writes to the pipe). Reply: ``<qqqI``
  (applied, duplicates, last stream seq, rejected count), then per rejection ``<QI``
  (stream seq, reason length) and the reason; the parent still holds the messages' bytes.
- ``APPLY | CHAINED``: the same, written while the apply before it is still in flight;
  the child tries it only if its last apply committed, else answers ``NOT_ATTEMPTED``
  (nothing written) and the actor retries it after that batch. The child then never
  waits for the parent's event loop between two batches, and a retry is never overtaken.
- ``GENERATION``: reply ``<qq`` (epoch, stream seq). The child sends one unasked once it
  has opened the index (or an ``ERROR`` frame when it could not).
- ``PURGE``: orjson ``{"session_ids": [...], "older_than_ms": int | null}``; reply ``<qqq``
  (removed, epoch, stream seq).
- ``INFO``: reply orjson of the ``meta`` table (stream identity, sequence, index id).
- ``BIND``: orjson ``{"name", "created", "first_seq"}``: record the stream the index
  replicates (``WriterCore.bind_stream``); reply as ``INFO``.
- A failed request gets an ``ERROR`` frame with a one-line message; its transaction was
  rolled back.

The child reads a whole frame before acting on it: when the parent dies mid-frame the read
comes up short and the child exits without touching the index. It dies with its parent
(``PR_SET_PDEATHSIG`` on Linux, and EOF on stdin everywhere) and ignores SIGINT/SIGTERM:
a terminal's Ctrl-C or a service manager's SIGTERM reaches the whole process group, and
the parent's graceful stop still needs the writer to apply what it drains. The parent ends
the child by closing its stdin at a frame boundary.

A child that dies is reported (``WriterProcessError``, logged with its exit status) and
started again by the next request: the ingest actor retries the batch, and the stored
stream sequence skips whatever of it had committed before the crash. A child started again
gets ``--expect-index-id`` (the id the first child found in ``meta``): it opens the file
without creating it and checks the id, so a removed or replaced index is answered
``FILE_LOST`` (``IndexFileLost``: ingestion stops) instead of a fresh empty index that
would claim to be complete.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import io
import marshal
import os
import select
import signal
import struct
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

import orjson
import structlog

from worker.store.errors import IndexFileError
from worker.store.errors import IndexFileLost as IndexFileLost
from worker.store.errors import WriterProcessError as WriterProcessError
from worker.store.protocol import (
    ApplyResult,
    BatchNotAttempted,
    Generation,
    IngestItem,
    Rejected,
    SessionIndexWriter,
)
from worker.store.writer import (
    BatchChecker,
    IndexFileReplaced,
    SqliteIndexWriter,
    WriterCore,
    WriterLifecycle,
    batch_from_rows,
    batch_rows,
    notify_listeners,
)

log = structlog.get_logger(__name__)

OP_APPLY: Final = 1
OP_GENERATION: Final = 2
OP_PURGE: Final = 3
OP_INFO: Final = 4
OP_BIND: Final = 5
# Or'ed into an apply's op: tried only if the child's last apply committed.
CHAINED: Final = 0x80
STATUS_OK: Final = 0
STATUS_ERROR: Final = 1
STATUS_NOT_ATTEMPTED: Final = 2
# The child cannot write the index its worker opened (removed or replaced): not retried.
STATUS_FILE_LOST: Final = 3

# The child's exit status when its parent vanished in the middle of a request frame.
EXIT_TORN: Final = 3

HEADER: Final = struct.Struct("<BQ")
_RESULT: Final = struct.Struct("<qqqI")
_REJECTED: Final = struct.Struct("<QI")
_GENERATION: Final = struct.Struct("<qq")
_PURGED: Final = struct.Struct("<qqq")

_START_TIMEOUT_S: Final = 60.0
_EXIT_TIMEOUT_S: Final = 10.0
# Linux: a pipe that holds a whole batch (~200 KB) takes it in one write.
_PIPE_BYTES: Final = 1 << 20
_F_SETPIPE_SZ: Final = 1031
_PR_SET_PDEATHSIG: Final = 1
# The package's own root, first on the child's path, so the child imports this very code.
_ROOT: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- the frames ----------------------------------------------------------------------------


def encode_batch(checker: BatchChecker, items: Sequence[IngestItem]) -> bytes:
    """A whole ``APPLY`` frame, header included (one pipe write): the messages checked
    here, as ``batch_rows`` tuples in ``marshal``'s format (both ends run the same
    interpreter, and only the parent writes to the pipe)."""
    body = marshal.dumps(batch_rows(checker.prepare(items)))
    return HEADER.pack(OP_APPLY, len(body)) + body


def encode_result(result: ApplyResult) -> bytes:
    parts = [
        _RESULT.pack(
            result.applied, result.duplicates, result.last_stream_seq, len(result.rejected)
        )
    ]
    for rejected in result.rejected:
        reason = rejected.reason.encode()
        parts.append(_REJECTED.pack(rejected.stream_seq, len(reason)))
        parts.append(reason)
    return b"".join(parts)


def decode_result(body: bytes, items: Sequence[IngestItem]) -> ApplyResult:
    applied, duplicates, last, count = _RESULT.unpack_from(body, 0)
    offset = _RESULT.size
    rejected: list[Rejected] = []
    if count:
        data_of = {item.stream_seq: item.data for item in items}
        for _ in range(count):
            stream_seq, reason_len = _REJECTED.unpack_from(body, offset)
            offset += _REJECTED.size
            reason = body[offset : offset + reason_len].decode()
            offset += reason_len
            rejected.append(Rejected(stream_seq, data_of.get(stream_seq, b""), reason))
    return ApplyResult(
        applied=applied, duplicates=duplicates, rejected=tuple(rejected), last_stream_seq=last
    )


@dataclass(frozen=True, slots=True)
class FramedBatch:
    """A batch as ``prepare`` framed it: the bytes for the pipe, and the messages (for the
    dead letters, whose bytes the reply does not carry back)."""

    frame: bytes
    items: Sequence[IngestItem]


# -- the parent's side ---------------------------------------------------------------------

WRITER_MODES: Final = ("process", "thread")


async def open_index_writer(
    path: str | Path,
    *,
    mode: str = "process",
    text_cap_bytes: int = 64 * 1024,
    max_event_bytes: int = 1024 * 1024,
) -> ProcessIndexWriter | SqliteIndexWriter:
    """The index writer ingestion uses: in a child process (the default, two cores) or on
    a thread of this process (one core; no child to start)."""
    if mode == "process":
        return await ProcessIndexWriter.open(
            path, text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes
        )
    if mode == "thread":
        return await SqliteIndexWriter.open(
            path, text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes
        )
    raise ValueError(f"writer mode must be one of {', '.join(WRITER_MODES)}, got {mode!r}")


class _Child:
    """One writer process and the requests written to it, answered in order."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: deque[asyncio.Future[tuple[int, bytes]]] = deque()
        self.alive = True  # False once its replies ended: nothing more may be written
        self.reader: asyncio.Task[None] | None = None


class ProcessIndexWriter(WriterLifecycle, SessionIndexWriter):
    """The index's only writer, in a child process. Use ``await ProcessIndexWriter.open``.

    A request is written to the pipe in the caller's own step (a hop through the loop
    first would queue it behind whatever else is ready, a burst of NATS messages, while the
    child sits idle) and answered in order by one reader task per child, so a cancelled
    caller neither tears a frame nor leaves a reply unread for the next request. Nothing
    awaits the pipe's drain: callers wait for their replies, and the ingest actor keeps at
    most two batches in flight.
    """

    def __init__(self, location: str, *, text_cap_bytes: int, max_event_bytes: int) -> None:
        self._location = location
        self._text_cap_bytes = text_cap_bytes
        self._max_event_bytes = max_event_bytes
        self._child: _Child | None = None
        # The child derives the searchable text: each side of the pipe then does about half.
        self._checker = BatchChecker(
            text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes, text=False
        )
        self._starting = asyncio.Lock()  # one child started at a time, requests wait for it
        self._listeners: list[Callable[[], None]] = []
        self._closed = False
        self.restarts = 0  # children started again after one died
        # The id of the file the first child opened: a child started again must find it.
        self.index_id: str | None = None

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        text_cap_bytes: int = 64 * 1024,
        max_event_bytes: int = 1024 * 1024,
    ) -> ProcessIndexWriter:
        """Start the child; raises ``WriterProcessError`` when it cannot open the index."""
        writer = cls(str(path), text_cap_bytes=text_cap_bytes, max_event_bytes=max_event_bytes)
        writer._child = await writer._spawn()
        index_id = (await writer.info()).get("index_id")
        writer.index_id = None if index_id is None else str(index_id)
        return writer

    @property
    def pid(self) -> int | None:
        """The running child's pid (for tests and diagnostics)."""
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

    async def last_stream_seq(self) -> int:
        return (await self.generation()).seq

    async def generation(self) -> Generation:
        reply = await self._request(HEADER.pack(OP_GENERATION, 0))
        epoch, seq = _GENERATION.unpack(reply)
        return Generation(epoch=epoch, seq=seq)

    async def info(self) -> dict[str, object]:
        info: dict[str, object] = orjson.loads(await self._request(HEADER.pack(OP_INFO, 0)))
        return info

    async def bind_stream(self, name: str, created: str, first_seq: int) -> dict[str, object]:
        body = orjson.dumps({"name": name, "created": created, "first_seq": first_seq})
        info: dict[str, object] = orjson.loads(
            await self._request(HEADER.pack(OP_BIND, len(body)) + body)
        )
        return info

    async def apply(self, items: Sequence[IngestItem]) -> ApplyResult:
        return await self.apply_prepared(self.prepare(items))

    def prepare(self, items: Sequence[IngestItem]) -> FramedBatch:
        # Checked here, written there: each side of the pipe then does about half the work.
        return FramedBatch(encode_batch(self._checker, items), items)

    async def apply_prepared(self, batch: FramedBatch) -> ApplyResult:
        if not batch.items:
            return ApplyResult(
                applied=0, duplicates=0, last_stream_seq=await self.last_stream_seq()
            )
        return self._applied(await self._request(batch.frame), batch)

    async def apply_chained(self, batch: FramedBatch) -> ApplyResult:
        """Apply ``batch`` only if the apply before it (already queued, or the last one)
        committed; ``BatchNotAttempted`` otherwise. Lets the actor queue the next batch
        while the child still works on the one before, so the child never waits for it."""
        if not batch.items:
            return await self.apply_prepared(batch)
        frame = bytearray(batch.frame)
        frame[0] |= CHAINED
        return self._applied(await self._request(bytes(frame)), batch)

    def _applied(self, reply: bytes, batch: FramedBatch) -> ApplyResult:
        result = decode_result(reply, batch.items)
        notify_listeners(self._listeners)
        return result

    async def purge(
        self, *, session_ids: Sequence[str] = (), older_than_ms: int | None = None
    ) -> int:
        """Remove sessions (see ``WriterCore.purge``); the epoch is bumped when any went."""
        if not session_ids and older_than_ms is None:
            return 0
        body = orjson.dumps({"session_ids": list(session_ids), "older_than_ms": older_than_ms})
        reply = await self._request(HEADER.pack(OP_PURGE, len(body)) + body)
        count, _epoch, _seq = _PURGED.unpack(reply)
        if count:
            log.info("sessions purged", count=count)
            notify_listeners(self._listeners)
        return int(count)

    async def _request(self, frame: bytes) -> bytes:
        if self._closed:
            raise WriterProcessError("the index writer is closed")
        child = self._child
        if child is None or not child.alive or self._starting.locked():
            child = await self._running_child()
        reply: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        child.pending.append(reply)
        assert child.proc.stdin is not None
        child.proc.stdin.write(frame)
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
            lost = len(child.pending)
            if lost or not self._closed:
                log.error(
                    "writer process exited",
                    pid=child.proc.pid,
                    returncode=code,
                    requests_lost=lost,
                )
            while child.pending:
                waiter = child.pending.popleft()
                if not waiter.done():
                    waiter.set_exception(
                        WriterProcessError(f"the writer process exited (status {code})")
                    )

    async def _spawn(self) -> _Child:
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": _ROOT + (os.pathsep + path if path else "")}
        # fmt: off
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "worker.store.writer_process",
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
        if status == STATUS_FILE_LOST:
            await _finish(proc, close_stdin=True)
            raise IndexFileLost(reply.decode("utf-8", "replace"))
        if status != STATUS_OK:
            await _finish(proc, close_stdin=True)
            raise WriterProcessError(
                "the writer process could not open the index: " + reply.decode("utf-8", "replace")
            )
        child = _Child(proc)
        child.reader = asyncio.create_task(self._read_replies(child), name="writer-replies")
        return child


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


# -- the child's side ----------------------------------------------------------------------


def serve(core: WriterCore, requests: BinaryIO, replies: BinaryIO) -> int:
    """Answer requests until EOF; returns the exit status. Between requests, the search
    index catches up with the store and commits: when no request came for ``_IDLE_S``, and
    at least every commit interval however busy the pipe is."""
    committed = False  # whether the last apply committed: a chained one needs it
    while True:
        if core.search_pending() and (core.search_overdue() or not _readable(requests, _IDLE_S)):
            core.follow_search(_IDLE_FOLLOW_EVENTS, commit=True)
            continue
        header = requests.read(HEADER.size)
        if not header:
            return 0  # EOF at a frame boundary: the parent closed us
        if len(header) < HEADER.size:
            return _torn(len(header), HEADER.size)
        op, size = HEADER.unpack(header)
        body = requests.read(size) if size else b""
        if len(body) < size:
            # Never act on part of a frame: the parent went away while sending it.
            return _torn(len(body), size)
        if op & CHAINED and not committed:
            status, reply = STATUS_NOT_ATTEMPTED, b"the batch before it was not applied"
        else:
            op &= ~CHAINED
            try:
                status, reply = STATUS_OK, _handle(core, op, body)
            except Exception as exc:
                log.warning("writer request failed", op=op, exc_info=True)
                status, reply = STATUS_ERROR, _one_line(exc).encode()
            if op == OP_APPLY:
                committed = status == STATUS_OK
        replies.write(HEADER.pack(status, len(reply)))
        replies.write(reply)
        replies.flush()


# A quiet pipe for this long means the writer is idle: commit the search index now.
_IDLE_S: Final = 0.02
_IDLE_FOLLOW_EVENTS: Final = 5000


def _readable(requests: BinaryIO, timeout: float) -> bool:
    """Whether a request is waiting. ``requests`` must not buffer ahead (``_ExactReader``)
    or be in memory: select sees only the pipe."""
    try:
        fileno = requests.fileno()
    except (AttributeError, OSError, ValueError):
        return True  # in memory: everything is already there
    ready, _, _ = select.select([fileno], [], [], timeout)
    return bool(ready)


class _ExactReader(io.RawIOBase):
    """Unbuffered reads of exactly the bytes asked for (short only at EOF), so nothing
    waits in a Python buffer where ``select`` cannot see it."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw

    def fileno(self) -> int:
        return self._raw.fileno()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            return self._raw.read()
        chunks: list[bytes] = []
        left = size
        while left > 0:
            chunk = self._raw.read(left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def _handle(core: WriterCore, op: int, body: bytes) -> bytes:
    if op == OP_APPLY:
        return encode_result(core.apply(batch_from_rows(marshal.loads(body))))
    if op == OP_GENERATION:
        generation = core.generation()
        return _GENERATION.pack(generation.epoch, generation.seq)
    if op == OP_INFO:
        return orjson.dumps(core.info())
    if op == OP_BIND:
        request = orjson.loads(body)
        return orjson.dumps(
            core.bind_stream(request["name"], request["created"], int(request["first_seq"]))
        )
    if op == OP_PURGE:
        request = orjson.loads(body)
        count = core.purge(tuple(request["session_ids"]), request["older_than_ms"])
        generation = core.generation()
        return _PURGED.pack(count, generation.epoch, generation.seq)
    raise ValueError(f"unknown writer request {op}")


def _torn(got: int, wanted: int) -> int:
    log.warning("request frame cut short; nothing of it applied", received=got, expected=wanted)
    return EXIT_TORN


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("PR_SET_PDEATHSIG failed", errno=ctypes.get_errno())
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died before the line above took effect


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worker.store.writer_process",
        description="The index writer's child process (started by ProcessIndexWriter).",
    )
    parser.add_argument("--db", required=True)
    parser.add_argument("--text-cap-bytes", type=int, required=True)
    parser.add_argument("--max-event-bytes", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--expect-index-id", default=None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _die_with_parent(args.parent_pid)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray output goes to stderr, never into a reply frame
    requests: BinaryIO = _ExactReader(sys.stdin.buffer.raw)  # type: ignore[assignment,union-attr]

    from worker.logs import configure_logging

    configure_logging()
    try:
        core = WriterCore.open(
            args.db,
            text_cap_bytes=args.text_cap_bytes,
            max_event_bytes=args.max_event_bytes,
            expect_index_id=args.expect_index_id,
        )
        generation = core.generation()
    except Exception as exc:
        lost = isinstance(exc, IndexFileReplaced)
        message = (str(exc) if isinstance(exc, IndexFileError) else _one_line(exc)).encode()
        status = STATUS_FILE_LOST if lost else STATUS_ERROR
        replies.write(HEADER.pack(status, len(message)) + message)
        replies.flush()
        return 1
    try:
        replies.write(HEADER.pack(STATUS_OK, _GENERATION.size))
        replies.write(_GENERATION.pack(generation.epoch, generation.seq))
        replies.flush()
        return serve(core, requests, replies)
    except BrokenPipeError:
        return 0  # the parent is gone; whatever committed stays committed
    finally:
        core.close()


if __name__ == "__main__":
    sys.exit(main())
